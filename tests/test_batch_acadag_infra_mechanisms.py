"""Mechanisms learned from blind batches ac, ad and ag (network, permissions, filesystem, shm,
host_oom), end to end on lines that are not the cases' own (other reports of the same
messages, as their programs print them):

* A forward proxy refusing the CONNECT tunnel (http.client's `Tunnel connection failed`,
  urllib3's ProxyError) is network.
* huggingface_hub's newer "cannot find the requested files in the local cache" wording is the
  Hub unreachable with nothing cached: network.
* Docker's `mkdir <source>: file exists` for a bind-mount source is a source the daemon may not
  stat (a FUSE mount without allow_other): permissions.
* NCCL failing to attach a peer's /dev/shm segment is shm.
* GNU tar's short write is the filesystem it writes to (a full disk).
* A FileExistsError raised inside os.makedirs on a rank is the shared-filesystem race.
* An MPIJob launcher pod in Error while its workers run is the launcher not reaching them yet.
* An Istio sidecar routing the PyTorch rendezvous port is network context.
* DataLoader's SIGKILL message with its pid elided is still host_oom.
* From batches ae and af: Windows' ERROR_PRIVILEGE_NOT_HELD (WinError 1314, a symbolic link
  without the privilege) is permissions; the libp2p daemon reaching none of its bootstrap peers
  and wandb.init timing out are network; LMDB refused by the filesystem (ENOSYS/ENOLCK) is
  filesystem; inotify's ENOSPC (the watch limit) is no full disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mechanism_helpers import Scenario, assert_scenario_verdict, log_report

SCENARIOS = (
    # mozilla/bugbot#2002
    Scenario(
        "proxy-tunnel-403",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "/app/bugbot/rules/triage_owner_rotations.py", line 88, in get_bugs\n'
            "    r = requests.get(url, params=params)\n"
            "requests.exceptions.ProxyError: HTTPSConnectionPool(host='bugzilla.mozilla.org', "
            "port=443): Max retries exceeded with url: /rest/user (Caused by ProxyError('Cannot "
            "connect to proxy.', OSError('Tunnel connection failed: 403 Forbidden')))\n"
        },
        "network",
        "network-http-proxy-refused-tunnel",
    ),
    # yuruotong1/autoMate#104
    Scenario(
        "hf-hub-local-cache-wording",
        {
            "train.log": "huggingface_hub.errors.LocalEntryNotFoundError: An error happened "
            "while trying to locate the file on the Hub and we cannot find the requested files "
            "in the local cache. Please check your connection and try again or make sure your "
            "Internet connection is on.\n"
        },
        "network",
        "network-hf-hub-unreachable-no-cache",
    ),
    # juicedata/juicefs#209
    Scenario(
        "docker-bind-source-fuse",
        {
            "run.log": "docker: Error response from daemon: error while creating mount source "
            "path '/home/ubuntu/test_juc/fs': mkdir /home/ubuntu/test_juc/fs: file exists.\n"
            "ERRO[0000] error waiting for container: context canceled\n"
        },
        "permissions",
        "permissions-docker-bind-source-unreadable",
    ),
    # NVIDIA/nccl#1589
    Scenario(
        "nccl-shm-attach",
        {
            "train.log": "g148:14937:69361 [0] NCCL INFO Channel 00/1 : 0[0] -> 7[7] via "
            "P2P/CUMEM\n"
            "g148:14937:69361 [0] misc/shmutils.cc:93 NCCL WARN Call to open failed: No such "
            "file or directory\n"
            "g148:14937:69361 [0] misc/shmutils.cc:129 NCCL WARN Error while attaching to "
            "shared memory segment /dev/shm/nccl-glnlGK (size 14156128), error: No such file or "
            "directory (2)\n"
        },
        "shm",
        "shm-nccl-segment-attach-failed",
    ),
    # stupidloud/cachewrtbuild#29 (the disk was 100 % full)
    Scenario(
        "tar-short-write",
        {
            "build.log": "gzip: stdout: No space left on device\n"
            "/usr/bin/tar: cache.tgz: Wrote only 4096 of 10240 bytes\n"
            "/usr/bin/tar: Child returned status 1\n"
            "/usr/bin/tar: Error is not recoverable: exiting now\n"
        },
        "filesystem",
        "filesystem-tar-short-write",
    ),
    # mlcommons/storage#699: dlio_benchmark's checkpoint directory on a filesystem of 8 hosts
    Scenario(
        "makedirs-race",
        {
            "train.log": "[rank12]: Traceback (most recent call last):\n"
            '[rank12]:   File "/usr/local/lib/python3.12/dist-packages/dlio_benchmark/'
            'checkpointing/base_checkpointing.py", line 390, in save_checkpoint\n'
            "[rank12]:     self.checkpoint_storage.create_node(checkpoint_id, exist_ok=True)\n"
            '[rank12]:   File "/usr/local/lib/python3.12/dist-packages/dlio_benchmark/storage/'
            'file_storage.py", line 58, in create_node\n'
            "[rank12]:     os.makedirs(self.get_uri(id), exist_ok=exist_ok)\n"
            '[rank12]:   File "<frozen os>", line 225, in makedirs\n'
            "[rank12]: FileExistsError: [Errno 17] File exists: "
            "'/mnt/shared/checkpoints/global_epoch1_step2'\n"
        },
        "filesystem",
        "filesystem-makedirs-exists-race-shared-fs",
    ),
    # kubeflow/mpi-operator#481's example job, as `kubectl get pods` lists it
    Scenario(
        "mpijob-launcher-crashloop",
        {
            "pods.txt": "NAME                                   READY   STATUS             "
            "RESTARTS      AGE\n"
            "tensorflow-benchmarks-launcher-8vxqn   0/1     CrashLoopBackOff   3 (22s ago)   "
            "2m\n"
            "tensorflow-benchmarks-worker-0         1/1     Running            0             "
            "2m\n"
            "tensorflow-benchmarks-worker-1         1/1     Running            0             "
            "2m\n"
        },
        "network",
        "network-mpijob-launcher-failed-workers-unreachable",
    ),
    # huggingface/huggingface_hub#1067 (Developer Mode off)
    Scenario(
        "windows-symlink-privilege",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "C:\\hf\\src\\huggingface_hub\\file_download.py", line 879, in '
            "_create_relative_symlink\n"
            "    os.symlink(relative_src, dst)\n"
            "OSError: [WinError 1314] A required privilege is not held by the client: "
            "'..\\\\..\\\\blobs\\\\ae8c63daedbd4206d7d40126955d4e6ab1c80f8f' -> 'C:\\\\Users\\\\"
            "L\\\\.cache\\\\huggingface\\\\hub\\\\models--distilbert-base-uncased\\\\snapshots\\\\"
            "043235d6088ecd3dd5fb5ca3592b6913fd516027\\\\.gitattributes'\n"
        },
        "permissions",
        "permissions-windows-privilege-not-held",
    ),
    # gensyn-ai/rl-swarm#246
    Scenario(
        "libp2p-bootstrap-peers",
        {
            "train.log": '  File "/root/.venv/lib/python3.12/site-packages/hivemind/utils/'
            'mpfuture.py", line 254, in result\n'
            "    return super().result(timeout)\n"
            '  File "/usr/lib/python3.12/concurrent/futures/_base.py", line 401, in '
            "__get_result\n"
            "    raise self._exception\n"
            "hivemind.p2p.p2p_daemon_bindings.utils.P2PDaemonError: Daemon failed to start: "
            "2025/05/05 05:11:19 failed to connect to bootstrap peers\n"
            ">> Shutting down trainer...\n"
            "Terminated\n"
        },
        "network",
        "network-libp2p-bootstrap-peers-unreachable",
    ),
    # jnwatson/py-lmdb#100 (Cray DVS)
    Scenario(
        "lmdb-enosys",
        {
            "prep.log": "Traceback (most recent call last):\n"
            '  File "<stdin>", line 1, in <module>\n'
            "lmdb.Error: trainingData: Function not implemented\n"
        },
        "filesystem",
        "filesystem-lmdb-unsupported-by-filesystem",
    ),
    # momentum-robotics-lab/deformgs#7
    Scenario(
        "wandb-init-timeout",
        {
            "train.log": "wandb: Using wandb-core as the SDK backend.\n"
            "wandb: W&B API key is configured. Use `wandb login --relogin` to force relogin\n"
            "wandb: Network error (ConnectTimeout), entering retry loop.\n"
            "wandb: ERROR Run initialization has timed out after 600 sec. Please try "
            "increasing the timeout with the `init_timeout` setting: "
            "`wandb.init(settings=wandb.Settings(init_timeout=120))`.\n"
            "Traceback (most recent call last):\n"
            '  File "train.py", line 719, in <module>\n'
            "    wandb.init(project=args.wandb_project,name=args.wandb_name)\n"
        },
        "network",
        "network-wandb-init-timed-out",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_batch_acadag_infra_scenarios(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_dataloader_sigkill_with_elided_pid_is_host_oom(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "run",
        "step 100 loss 1.92\n"
        "RuntimeError: DataLoader worker (pid XXX) is killed by signal: Killed.\n",
    )
    assert report.causes[0].category == "host_oom"
    assert "host-oom-dataloader-worker-killed" in {e.rule for e in report.causes[0].evidence}


def test_istio_sidecar_on_rendezvous_port_points_at_network(tmp_path: Path) -> None:
    # an Envoy access-log line of a worker's sidecar, Istio's default format
    report = log_report(
        tmp_path / "run",
        '[2023-03-02T10:14:08.511Z] "- - -" 0 UF,URX - - "-" 0 0 10003 - "-" "-" "-" "-" '
        '"10.1.0.200:23456" outbound|23456||pytorch-simple-master-0.kubeflow.svc.cluster.local'
        " - 10.1.0.200:23456 10.1.0.201:38244 - -\n",
    )
    assert report.causes[0].category == "network"
    assert "network-istio-sidecar-on-rendezvous-port" in {e.rule for e in report.causes[0].evidence}


def test_a_makedirs_permission_error_is_no_race(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "run",
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 40, in main\n'
        "    os.makedirs(args.output_dir, exist_ok=True)\n"
        '  File "<frozen os>", line 225, in makedirs\n'
        "PermissionError: [Errno 13] Permission denied: '/data/out'\n",
    )
    assert report.causes[0].category == "permissions"
    rules = {e.rule for cause in report.causes for e in cause.evidence}
    assert "filesystem-makedirs-exists-race-shared-fs" not in rules


def test_inotify_watch_limit_is_no_full_disk(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "run",
        "Error: ENOSPC: System limit for number of file watchers reached, watch '/app/src'\n"
        "OSError: [Errno 28] inotify watch limit reached\n",
    )
    rules = {e.rule for cause in report.causes for e in cause.evidence}
    assert "filesystem-no-space-left" not in rules
