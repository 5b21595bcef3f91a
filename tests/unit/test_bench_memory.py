"""The benchmark's memory sampler, on this very process as the "JVM": its resident set and
the split into anonymous and file-backed memory."""

from __future__ import annotations

import mmap
import os
import tempfile

from applier.bench.memory import MemorySampler


def test_the_split_follows_anonymous_and_mapped_memory():
    s = MemorySampler(jvm_pid=os.getpid())
    s.sample()
    anon0, file0 = s.peak_jvm_anon_mib, s.peak_jvm_file_mib
    assert 0 < anon0 <= s.peak_jvm_mib and 0 < file0 <= s.peak_jvm_mib
    block = bytearray(64 * 1024 * 1024)  # 64 MiB of our own, touched
    for i in range(0, len(block), 4096):
        block[i] = 1
    with tempfile.TemporaryFile() as f:
        f.truncate(64 * 1024 * 1024)
        with mmap.mmap(f.fileno(), 0) as m:  # 64 MiB of a file, every page read
            total = sum(m[i] for i in range(0, len(m), 4096))
            s.sample()
    assert total == 0 and block[0] == 1
    assert s.peak_jvm_anon_mib >= anon0 + 60
    assert s.peak_jvm_file_mib >= file0 + 60
    doc = s.to_json()
    assert doc["driver_jvm_anon_peak_mib"] == round(s.peak_jvm_anon_mib, 1)
    assert doc["driver_jvm_file_peak_mib"] == round(s.peak_jvm_file_mib, 1)


def test_workers_are_the_python_descendants_only():
    """A child that is not Python (the JVM's shell commands) is not a worker: it would show
    its parent's resident set while it shares the parent's memory."""
    import subprocess
    import sys
    import time

    py = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(80 << 20); time.sleep(30)"])
    other = subprocess.Popen(["sleep", "30"])
    try:
        s = MemorySampler(jvm_pid=os.getpid())
        for _ in range(100):  # until the Python child holds its 80 MiB
            s.sample()
            if s.peak_worker_mib >= 80:
                break
            time.sleep(0.05)
        assert s.peak_worker_mib >= 80
        assert py.pid in s.worker_cpu and other.pid not in s.worker_cpu
    finally:
        py.kill()
        other.kill()
        py.wait()
        other.wait()


def test_cpu_of_a_tree_counts_a_child_while_it_runs_and_after_it_is_reaped():
    """The bench's server CPU: the tree's live members' own time plus their reaped children's."""
    import subprocess
    import sys

    from applier.sparkenv.processes import descendants, own_cpu, parent_of, tree_cpu_seconds

    before = tree_cpu_seconds(os.getpid())
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\nprint(1, flush=True)\ninput()"
    child = subprocess.Popen(
        [sys.executable, "-c", burn], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "1"
        assert child.pid in descendants(os.getpid()) and parent_of(child.pid) == os.getpid()
        assert own_cpu(child.pid) >= 0.5
        assert tree_cpu_seconds(os.getpid()) >= before + 0.5  # the child, live
    finally:
        child.communicate("\n", timeout=30)
    assert tree_cpu_seconds(os.getpid()) >= before + 0.5  # the child, reaped: its time is ours
