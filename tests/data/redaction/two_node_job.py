# ruff: noqa: E501  (log lines are data: they keep their real length)
"""A realistic two-node job folder with planted personal and secret values, written on demand.

`write_job(folder)` writes what a failed two-node DeepSpeed run on Slurm leaves behind (the
pdsh-prefixed launcher log, the environment, kern.log, df, docker inspect, nvidia-smi -q,
InfiniBand and network tools, a setup script's log) and returns every planted value. The values
sit where a security reviewer finds them in real jobs: host names in file names and in pdsh
prefixes, users in paths outside /home, cloud account ids inside bucket and storage-account host
names, connection strings, database passwords on command lines, W&B entities, GCP ids in
escaped JSON, Azure tenant and subscription ids, InfiniBand GUIDs, scheduler host variables and
IPv6 addresses with a zone after an interface name.

`KEPT` lists text that must survive redaction unchanged: versions, tool names, Python
identifiers, interface names, PCI ids, Xid codes, sizes, exit codes.

The failure itself is the classic one: a DataLoader worker dies of a Bus error because the
container's /dev/shm is 64 MiB (verdict `shm`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Planted(NamedTuple):
    kind: str
    value: str


NODE_A = "trn-h100-031"
NODE_B = "trn-h100-032"

PLANTED: tuple[Planted, ...] = (
    # hosts: the two nodes (file names, pdsh prefixes, NCCL), the login node, services
    Planted("host", NODE_A),
    Planted("host", NODE_B),
    Planted("host", "login-07"),
    Planted("host", "spine-sw-04"),
    Planted("host", "leaf-sw-12"),
    Planted("host", "db-meta-02"),
    Planted("host", "pg-meta.orion.internal"),
    Planted("host", "nfs-home-03.orion.internal"),
    Planted("host", "registry.orion-ml.net"),
    Planted("host", "cache-05"),
    Planted("host", "cluster0.ab1cd.mongodb.net"),
    Planted("host", "orion-sql"),
    Planted("host", "orion-bus"),
    # addresses
    Planted("ip", "10.88.12.31"),
    Planted("ip", "10.88.12.32"),
    Planted("ip", "10.88.4.7"),
    Planted("ip", "10.88.0.11"),
    Planted("ip", "172.17.0.3"),
    Planted("ip", "203.0.113.77"),
    Planted("ip", "fe80::ba59:9f03:a1:3e9c"),
    Planted("ip", "fe80::ba59:9f03:a1:3f10"),
    Planted("ip", "fd12:3456:789a::31"),
    Planted("ip", "2001:db8:88::32"),
    # hardware addresses: Ethernet MACs and InfiniBand GUIDs
    Planted("mac", "b8:59:9f:a1:3e:9c"),
    Planted("mac", "02:42:ac:11:00:03"),
    Planted("mac", "0xb8599f0300a13e9c"),
    Planted("mac", "0xb8599f0300a13e9d"),
    Planted("mac", "b859:9f03:00a1:3f10"),
    # users: scheduler, paths outside /home, W&B, ssh, id, databases
    Planted("user", "mkowalski"),
    Planted("user", "jliang"),
    Planted("user", "orion_svc"),
    Planted("user", "orionadmin"),
    Planted("user", "orion_app"),
    Planted("user", "orion-vision-lab"),
    Planted("email", "mkowalski@orion-ml.net"),
    Planted("email", "ft-runner@orion-ml-4821.iam.gserviceaccount.com"),
    # cloud accounts, projects, tenants, subscriptions
    Planted("account", "210987654321"),
    Planted("account", "345678901234"),
    Planted("account", "orionckptstore"),
    Planted("account", "orion-ml-4821"),
    Planted("account", "104958372615243987612"),
    Planted("account", "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"),
    Planted("account", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
    Planted("account", "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"),
    Planted("account", "proj-orion"),
    Planted("instance", "i-0a1b2c3d4e5f60718"),
    Planted("gpu-uuid", "GPU-3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9"),
    Planted("serial", "1654923007311"),
    # secrets
    Planted("secret", "hf_OrIoNtOkEnAbCdEfGhIjKlMnOpQrStUvWx42"),
    Planted("secret", "7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b"),
    Planted("secret", "ghp_0rI0nG1tHuBt0kEnAbCdEfGhIjKlMnOpQr"),
    Planted("secret", "M3taDbPa55w0rd"),
    Planted("secret", "Pg2025Secret"),
    Planted("secret", "Orion-Pg-Pw-77"),
    Planted("secret", "R3disOrionKey"),
    Planted("secret", "MlflowDbPw2025"),
    Planted("secret", "SqlServerPw2025x"),
    Planted("secret", "M0ngoPw2025"),
    Planted(
        "secret",
        "q9Zr7Xw3Lk5Jh8Gf2Ds4Ap6Ou1Iy0Tr9Ee3Ww7Qq5Zz2Xx8Cc4Vv6Bb1Nn0Mm3Ll5Kk7Jj9Hh2Gg4Ff6Dd8Ss0Aa==",
    ),
    Planted("secret", "sv2022sigQm9XcV7bN3mL1kJ8hG4fD2sA6pO0iU5yT"),
    Planted("secret", "Sb7Kq2Wm9Xn4Vb6Lp1Zr3Ty8Ue5Io0Pa2Sd4Fg6Hj8="),
    Planted("secret", "8f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c"),
    Planted(
        "secret",
        "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJta293YWxza2kiLCJ0aWQiOiI2ZjFjIn0"
        ".Zk3Lp9Qw2Er5Ty8Ui1Op4As7Df0Gh3Jk6Lz9Xc2Vb5Nm8",
    ),
    Planted("secret", "ya29.a0OrIoNQuErYToKeN1234567890abcdefXYZ"),
    Planted("secret", "AKIAORION7EXAMPLE2QZ"),
    Planted("secret", "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"),
)

KEPT: tuple[str, ...] = (
    "cuDNN version: 8.9.2.26",
    "nvidia-cudnn-cu12==8.9.2.26",
    "nvidia_cublas_cu12-12.1.3.1-py3-none-manylinux1_x86_64.whl",
    "TensorRT 8.6.1.6",
    "libnvinfer8_8.6.1.6-1+cuda12.0_amd64.deb",
    "threading.local",
    "torchvision.io",
    "nccl-tests:",
    "gpu-burn:",
    "ib0:",
    "%ib0",
    "mlx5_0:1/IB",
    "0000:3b:00.0",
    "Xid (PCI:0000:3b:00): 79",
    "exit code 135",
    "64M",
    "NCCL version 2.21.5+cuda12.4",
    "550.90.07",
    "96.00.89.00.01",
    "Bus error",
)
"""Text the diagnosis needs: present in the job, unchanged after redaction."""


def _launcher() -> str:
    a, b = NODE_A, NODE_B
    return f"""\
+ export MASTER_ADDR={a}
+ export MASTER_PORT=29500
+ export HF_TOKEN=hf_OrIoNtOkEnAbCdEfGhIjKlMnOpQrStUvWx42
+ export WANDB_API_KEY=7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b
+ export WANDB_ENTITY=orion-vision-lab
+ deepspeed --hostfile /lustre/fsw/orion/users/mkowalski/hostfile --master_addr {a} train.py
[2025-06-10 14:02:01,113] [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w {a},{b} export PYTHONPATH=/lustre/fsw/orion/users/mkowalski/llama-ft; cd /lustre/fsw/orion/users/mkowalski/llama-ft; /scratch/mkowalski/envs/ft/bin/python -u -m deepspeed.launcher.launch --node_rank=%n --master_addr=10.88.12.31 --master_port=29500 train.py
{a}: [2025-06-10 14:02:03,201] [INFO] [launch.py:146:main] WORLD INFO DICT: {{'{a}': [0, 1, 2, 3], '{b}': [0, 1, 2, 3]}}
{b}: [2025-06-10 14:02:03,207] [INFO] [launch.py:146:main] nnodes=2, num_local_procs=4, node_rank=1
{a}:71234:71234 [0] NCCL INFO Bootstrap : Using ib0:fe80::ba59:9f03:a1:3e9c%ib0<0>
{a}:71234:71234 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
{b}:40112:40112 [1] NCCL INFO NET/Socket : Using [0]eth0:10.88.12.32<0> [1]ib0:fe80::ba59:9f03:a1:3f10%ib0<0>
{b}:40112:40112 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:fe80::ba59:9f03:a1:3f10%ib0<0>
{b}:40112:40112 [1] NCCL INFO Connected to fd12:3456:789a::31 port 41623
{a}: wandb: Currently logged in as: mkowalski (orion-vision-lab). Use `wandb login --relogin` to force relogin
{a}: wandb: View run at https://wandb.ai/orion-vision-lab/llama-ft/runs/k3j9x2vb
{a}: Loading checkpoint /lustre/fsw/orion/users/mkowalski/ckpt/step_1200 (owner jliang, shared from /checkpoint/jliang/llama)
{a}: Uploading to s3://sagemaker-us-west-2-210987654321/orion/ckpt/step_1200
{a}: Mirror https://orion-ckpt-345678901234.s3.us-west-2.amazonaws.com/step_1200/model.safetensors
{b}: Reading https://orionckptstore.blob.core.windows.net/ckpt/step_1200?sv=2022-11-02&ss=b&sig=sv2022sigQm9XcV7bN3mL1kJ8hG4fD2sA6pO0iU5yT
{b}: Pulling registry.orion-ml.net:5000/ft/llama:2025.06
{a}: threading.local() storage for the tokenizer; torchvision.io backend: pyav
{b}: [rank5]: cuDNN version: 8.9.2.26, TensorRT 8.6.1.6
{b}: Caught signal 7 (Bus error: nonexistent physical address)
{b}: ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
{b}: [rank5]: Traceback (most recent call last):
{b}: [rank5]:   File "/scratch/mkowalski/envs/ft/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
{b}: [rank5]:     data = self._data_queue.get(timeout=timeout)
{b}: [rank5]: RuntimeError: DataLoader worker (pid 40233) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.
{a}: [rank1]:[W610 14:33:02.118 socket.cpp:464] [c10d] The client socket has failed to connect to [{b}.cluster.orion.internal]:29500 (errno: 111 - Connection refused).
{a}: ssh: connect to host {b} port 22: Connection timed out
pdsh@login-07: {b}: ssh exited with exit code 135
nccl-tests: all_reduce_perf -b 8 -e 8G -f 2 -g 8 skipped on this allocation
gpu-burn: not run (allocation ended)
[2025-06-10 14:33:05,002] [ERROR] [launch.py:325:sigkill_handler] ['/scratch/mkowalski/envs/ft/bin/python', '-u', 'train.py', '--local_rank=1'] exits with return code = -7
"""


def _environment() -> str:
    a = NODE_A
    return f"""\
SLURM_JOB_ID=918273
SLURM_JOB_NAME=llama-ft
SLURM_JOB_USER=mkowalski
SLURM_JOB_ACCOUNT=proj-orion
SLURM_JOB_PARTITION=h100
SLURM_JOB_NODELIST=trn-h100-[031-032]
SLURM_NODELIST=trn-h100-[031-032]
SLURMD_NODENAME={a}
SLURM_SUBMIT_HOST=login-07
SLURM_SUBMIT_DIR=/lustre/fsw/orion/users/mkowalski/llama-ft
SLURM_LAUNCH_NODE_IPADDR=10.88.4.7
SLURM_SRUN_COMM_HOST=10.88.4.7
SLURM_TOPOLOGY_ADDR=spine-sw-04.leaf-sw-12.{a}
SLURM_TOPOLOGY_ADDR_PATTERN=switch.switch.node
MASTER_ADDR={a}
MASTER_PORT=29500
WORLD_SIZE=8
HOSTNAME={a}
USER=mkowalski
AZURE_TENANT_ID=6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f
ARM_SUBSCRIPTION_ID=0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d
AZURE_CLIENT_ID=5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9
AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=orionckptstore;AccountKey=q9Zr7Xw3Lk5Jh8Gf2Ds4Ap6Ou1Iy0Tr9Ee3Ww7Qq5Zz2Xx8Cc4Vv6Bb1Nn0Mm3Ll5Kk7Jj9Hh2Gg4Ff6Dd8Ss0Aa==;EndpointSuffix=core.windows.net
SERVICEBUS_CONNECTION=Endpoint=sb://orion-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=Sb7Kq2Wm9Xn4Vb6Lp1Zr3Ty8Ue5Io0Pa2Sd4Fg6Hj8=
GCP_SA_JSON="{{\\"type\\": \\"service_account\\", \\"project_id\\": \\"orion-ml-4821\\", \\"private_key_id\\": \\"8f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c\\", \\"client_email\\": \\"ft-runner@orion-ml-4821.iam.gserviceaccount.com\\", \\"client_id\\": \\"104958372615243987612\\"}}"
AWS_ACCESS_KEY_ID=AKIAORION7EXAMPLE2QZ
AWS_SECRET_ACCESS_KEY=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
MLFLOW_TRACKING_TOKEN=eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJta293YWxza2kiLCJ0aWQiOiI2ZjFjIn0.Zk3Lp9Qw2Er5Ty8Ui1Op4As7Df0Gh3Jk6Lz9Xc2Vb5Nm8
EC2_INSTANCE_ID=i-0a1b2c3d4e5f60718
"""


def _setup() -> str:
    return """\
$ id
uid=20417(jliang) gid=20417(jliang) groups=20417(jliang),27(sudo)
$ pip install nvidia-cudnn-cu12==8.9.2.26 nvidia_cublas_cu12-12.1.3.1-py3-none-manylinux1_x86_64.whl
Successfully installed nvidia-cudnn-cu12-8.9.2.26
$ dpkg -i libnvinfer8_8.6.1.6-1+cuda12.0_amd64.deb
$ mysql -h db-meta-02 -u orion_svc -pM3taDbPa55w0rd -e 'select 1'
$ psql "postgresql://orion_svc:Pg2025Secret@pg-meta.orion.internal:5432/runs" -c 'select 1'
$ PGPASSWORD=Orion-Pg-Pw-77 psql -h pg-meta.orion.internal -U orion_svc runs
$ redis-cli -h cache-05 -a R3disOrionKey ping
$ mlflow server --db-password=MlflowDbPw2025 --host 0.0.0.0
$ sqlcmd "Server=tcp:orion-sql.database.windows.net,1433;Initial Catalog=runs;User ID=orionadmin;Password=SqlServerPw2025x;Encrypt=True"
$ mongosh "mongodb+srv://orion_app:M0ngoPw2025@cluster0.ab1cd.mongodb.net/runs"
$ az login --service-principal --tenant 6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f
$ curl -s "https://login.microsoftonline.com/6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f/oauth2/v2.0/token"
$ az account set --subscription 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d
$ curl -s "https://storage.googleapis.com/upload?access_token=ya29.a0OrIoNQuErYToKeN1234567890abcdefXYZ"
$ git remote add origin https://ghp_0rI0nG1tHuBt0kEnAbCdEfGhIjKlMnOpQr@github.com/orion/llama-ft.git
$ git config user.email mkowalski@orion-ml.net
$ ssh mkowalski@trn-h100-032 nvidia-smi
$ curl ifconfig.me
203.0.113.77
"""


def _network() -> str:
    return """\
$ ip addr show ib0
4: ib0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 4092 qdisc mq state UP
    link/infiniband 80:00:02:08:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:a1:3e:9c brd 00:ff:ff:ff:ff:12
    inet 10.88.12.31/16 brd 10.88.255.255 scope global ib0
    inet6 fd12:3456:789a::31/64 scope global
    inet6 fe80::ba59:9f03:a1:3e9c/64 scope link
$ ip link show eth0
2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500
    link/ether b8:59:9f:a1:3e:9c brd ff:ff:ff:ff:ff:ff
$ ibstat mlx5_0
CA 'mlx5_0'
	CA type: MT4129
	Firmware version: 28.39.1002
	Node GUID: 0xb8599f0300a13e9c
	System image GUID: 0xb8599f0300a13e9c
	Port 1:
		State: Active
		Port GUID: 0xb8599f0300a13e9d
$ ibv_devinfo -d mlx5_0 (on trn-h100-032)
hca_id:	mlx5_0
	fw_ver:				28.39.1002
	node_guid:			b859:9f03:00a1:3f10
$ mount | grep lustre
10.88.0.11@o2ib:/orion on /lustre/fsw type lustre (rw)
"""


def _kern_log() -> str:
    b = NODE_B
    return f"""\
Jun 10 14:03:51 {b} kernel: [1204512.331] python[40233]: bus error (core dumped) ip 00007f3a2b1c4d5e sp 00007ffd1e2f3a40 error 4 in libc.so.6
Jun 10 14:03:52 {b} kernel: mlx5_core 0000:3b:00.0 ib0: Link up
Jun 10 14:03:52 {b} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=40233, name=python, GPU has fallen off the bus.
Jun 10 14:03:53 {b} sshd[51022]: Accepted publickey for mkowalski from 10.88.4.7 port 51544 ssh2
Jun 10 14:03:54 {b} kernel: docker0: port 1(veth1a2b3c) entered forwarding state
"""


def _df() -> str:
    return """\
Filesystem                         Size  Used Avail Use% Mounted on
overlay                            1.8T  1.1T  614G  65% /
shm                                 64M   64M     0 100% /dev/shm
10.88.0.11@o2ib:/orion             2.0P  1.4P  612T  70% /lustre/fsw
nfs-home-03.orion.internal:/home    50T   41T  9.0T  82% /home
"""


def _docker_inspect() -> str:
    b = NODE_B
    return f"""\
[
    {{
        "Id": "5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c",
        "Name": "/llama-ft-mkowalski",
        "State": {{"Status": "exited", "Running": false, "OOMKilled": false, "ExitCode": 135}},
        "HostConfig": {{
            "Binds": ["/lustre/fsw/orion/users/mkowalski/llama-ft:/workspace"],
            "ShmSize": 67108864,
            "IpcMode": "private",
            "Runtime": "nvidia"
        }},
        "Config": {{
            "Hostname": "{b}",
            "User": "mkowalski",
            "Image": "registry.orion-ml.net:5000/ft/llama:2025.06",
            "Env": [
                "NVIDIA_VISIBLE_DEVICES=GPU-3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9"
            ]
        }},
        "NetworkSettings": {{
            "IPAddress": "172.17.0.3",
            "MacAddress": "02:42:ac:11:00:03",
            "GlobalIPv6Address": "2001:db8:88::32"
        }}
    }}
]
"""


def _nvidia_smi_q() -> str:
    return """\
==============NVSMI LOG==============

Timestamp                                 : Tue Jun 10 14:40:02 2025
Driver Version                            : 550.90.07
CUDA Version                              : 12.4

Attached GPUs                             : 8
GPU 00000000:3B:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Serial Number                         : 1654923007311
    GPU UUID                              : GPU-3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9
    Minor Number                          : 0
    VBIOS Version                         : 96.00.89.00.01
"""


FILES: dict[str, str] = {
    "slurm-918273.out": "launcher",
    f"env-{NODE_A}.txt": "environment",
    f"setup_{NODE_A}.log": "setup",
    f"net-{NODE_A}.txt": "network",
    f"kern-{NODE_B}.log": "kern_log",
    f"df-h_{NODE_B}.txt": "df",
    f"docker-inspect.{NODE_B}.json": "docker_inspect",
    f"{NODE_B}.nvidia-smi-q.txt": "nvidia_smi_q",
}
"""File name -> what it holds; the node names in the names are part of what is planted."""

_WRITERS = {
    "launcher": _launcher,
    "environment": _environment,
    "setup": _setup,
    "network": _network,
    "kern_log": _kern_log,
    "df": _df,
    "docker_inspect": _docker_inspect,
    "nvidia_smi_q": _nvidia_smi_q,
}


def job_texts() -> dict[str, str]:
    """File name -> contents of the job folder."""
    return {name: _WRITERS[what]() for name, what in FILES.items()}


def write_job(folder: Path) -> tuple[Planted, ...]:
    """Write the job's files into `folder` (created) and return the planted values."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in job_texts().items():
        (folder / name).write_text(text, encoding="utf-8")
    return PLANTED


def leaks(text: str) -> list[str]:
    """The planted values found in `text` (case-insensitive)."""
    lower = text.lower()
    return [value for _, value in PLANTED if value.lower() in lower]


def damaged(text: str) -> list[str]:
    """The `KEPT` strings missing from `text` (a redacted whole job)."""
    return [kept for kept in KEPT if kept not in text]
