"""A one-node SLURM cluster on this machine, on loopback: munged, slurmctld and slurmd (Debian's
slurm-wlm 22.05 and munge) started in a temporary folder with a slurm.conf of their own, and
stopped (each by its process, never by name) when the `with` block ends, also on failure.

The node declares one GPU as a generic resource without a real GPU: slurm.conf's `GresTypes=gpu`
and the node's `Gres=gpu:pocl:1`, and gres.conf's `Name=gpu Type=pocl File=/dev/null` with
`AutoDetect=off`. (Slurm 22.05 drops a GPU without a `File=` from the node, "Removing file-less
GPU", and refuses a regular file, "not a valid character or block device"; /dev/null is a
character device, and with `TaskPlugin=task/none` and no cgroups nothing is bound to it.) Jobs that
ask for `--gpus=1` (the executor plugin's form of Snakemake's `gpu=1`) or `--gpus=pocl:1` get it
one at a time (`CUDA_VISIBLE_DEVICES=0`) and run their commands, which use PoCL. `SlurmdParameters=
config_overrides` lets the node declare more CPUs than the machine has (CI's 2), so that the
profile's requests (8 CPUs a search job, 16 for the merge) are scheduled as on a real node.
There is no accounting database: `MinJobAge` keeps finished jobs in slurmctld for an hour, for
`squeue --states=all` (the plugin's status command here) and `scontrol show job`.

Run as a script it starts the cluster, prints the `SLURM_CONF` to export, and waits for Ctrl-C.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "sinfo", "scontrol", "scancel")
NODE = "hmmcnode"
GPU_TYPE = "pocl"
NODE_CPUS = 16


def missing_binaries() -> list[str]:
    """The daemons and client commands not found on PATH (with /usr/sbin, where Debian puts the daemons)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    return [name for name in DAEMONS + CLIENTS if shutil.which(name, path=path) is None]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _memory_mb() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    raise RuntimeError("/proc/meminfo: no MemTotal line")


class SlurmCluster:
    """`with SlurmCluster(folder) as cluster:` a running one-node cluster; `cluster.env` is the
    environment (SLURM_CONF set) in which to run sbatch, squeue, scontrol or Snakemake."""

    def __init__(self, folder: Path, start_timeout_s: float = 60.0):
        self.folder = Path(folder)
        self.start_timeout_s = start_timeout_s
        self.conf = self.folder / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.env["PATH"] = self.env.get("PATH", "") + os.pathsep + "/usr/sbin"
        self._procs: list[subprocess.Popen] = []

    def _write_config(self) -> None:
        f = self.folder
        for sub in ("state", "spool", "munge"):
            (f / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
        key = f / "munge" / "munge.key"
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
            fh.write(os.urandom(1024))
        self.munge_socket = f / "munge" / "munge.sock"
        host = socket.gethostname().split(".")[0]
        user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
        self.conf.write_text(f"""\
ClusterName=hmmcascade
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={f / "state"}
SlurmdSpoolDir={f / "spool"}
SlurmctldPidFile={f / "slurmctld.pid"}
SlurmdPidFile={f / "slurmd.pid"}
SlurmctldLogFile={f / "slurmctld.log"}
SlurmdLogFile={f / "slurmd.log"}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={NODE_CPUS} RealMemory={_memory_mb()} Gres=gpu:{GPU_TYPE}:1 State=UNKNOWN
PartitionName=main Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
""")
        (f / "gres.conf").write_text(f"AutoDetect=off\nNodeName={NODE} Name=gpu Type={GPU_TYPE} File=/dev/null\n")

    def _start(self, name: str, *args: str) -> None:
        log = open(self.folder / f"{name}.out", "wb")
        self._procs.append(subprocess.Popen([shutil.which(name, path=self.env["PATH"]), *args], env=self.env,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        log.close()

    def _check_running(self) -> None:
        for proc in self._procs:
            if proc.poll() is not None:
                name = Path(proc.args[0]).name
                tail = (self.folder / f"{name}.out").read_text(errors="replace")[-1500:]
                log = self.folder / f"{name}.log"
                if log.exists():
                    tail += log.read_text(errors="replace")[-1500:]
                raise RuntimeError(f"{name} exited with status {proc.returncode}: {tail}")

    def _wait(self, what: str, ready) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not ready():
            self._check_running()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.folder}: {what} not ready after {self.start_timeout_s:.0f} s")
            time.sleep(0.5)

    def sinfo_state(self) -> str:
        run = subprocess.run(["sinfo", "--noheader", "--Node", "--format=%T"], env=self.env, capture_output=True,
                             text=True, timeout=30)
        return run.stdout.strip() if run.returncode == 0 else ""

    def __enter__(self) -> "SlurmCluster":
        self._write_config()
        try:
            self._start("munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                        f"--key-file={self.folder / 'munge' / 'munge.key'}",
                        f"--pid-file={self.folder / 'munge' / 'munged.pid'}",
                        f"--log-file={self.folder / 'munge' / 'munged.log'}",
                        f"--seed-file={self.folder / 'munge' / 'munged.seed'}")
            self._wait("munged", self.munge_socket.exists)
            self._start("slurmctld", "-D", "-i", "-f", str(self.conf))
            self._wait("slurmctld", lambda: subprocess.run(["scontrol", "ping"], env=self.env, capture_output=True,
                                                           timeout=30).returncode == 0)
            self._start("slurmd", "-D", "-N", NODE, "-f", str(self.conf))
            self._wait(f"node {NODE} idle (sinfo)", lambda: self.sinfo_state() == "idle")
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Cancel this cluster's jobs, then stop the daemons this object started, the last started
        first: SIGTERM, then SIGKILL after 20 s."""
        if any(proc.poll() is None for proc in self._procs) and self.conf.exists():
            subprocess.run(["scancel", "--quiet", f"--user={os.getuid()}"], env=self.env, capture_output=True,
                           timeout=30)
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=20)
        self._procs.clear()


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # (stops the daemons too)
    with SlurmCluster(Path(tempfile.mkdtemp(prefix="slurm-"))) as cluster:
        print(f"export SLURM_CONF={cluster.conf}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
