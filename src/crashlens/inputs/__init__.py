"""Finding inputs (folders, archives, compressed files, stdin) and reading them as bytes."""
