"""Where the Spark session runs: --master / --conf / [spark], $MASTER, spark-submit, and the
task-slot check that refuses, in seconds, a run needing more slots than the session has."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from applier import cli
from applier.api.session import spark_note, spark_of
from applier.cli.options import config_of, with_spark
from applier.config import demo_config, load_config, with_overrides
from applier.config.model import SparkSettings
from applier.errors import ConfigError
from applier.sparkenv.slots import (
    Master,
    Slots,
    check_local_master,
    choose_master,
    cluster_slots,
    count_slots,
    local_slots,
    slot_refusal,
    wait_for_slots,
)

# -- the arithmetic -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("master", "slots"),
    [
        ("local", 1),
        ("local[2]", 2),
        ("local[16]", 16),
        ("local[*]", 6),
        ("local[3,2]", 3),  # local[K, F]: K threads, F task failures
        ("local[*, 4]", 6),
        ("local-cluster[2, 3, 1024]", 6),
        ("spark://127.0.0.1:7077", None),
        ("yarn", None),
        ("k8s://https://api:6443", None),
    ],
)
def test_local_masters_have_their_threads_as_slots(master: str, slots: int | None) -> None:
    assert local_slots(master, cpus=6) == slots


def test_cluster_slots_are_each_executors_cores_over_task_cpus() -> None:
    assert cluster_slots([2, 2]) == 4
    assert cluster_slots([4, 4, 3], task_cpus=2) == 2 + 2 + 1
    assert cluster_slots([]) == 0


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def _sc(master: str, conf: dict[str, str] | None = None, *, executors: int = 0, concurrent: Any = 0) -> Any:
    """A SparkContext as count_slots sees it: its master, conf, and the JVM's counts
    (``concurrent`` an exception: Spark's private API is gone)."""

    def max_tasks(_rp: object) -> int:
        if isinstance(concurrent, Exception):
            raise concurrent
        return int(concurrent)

    jvm = SimpleNamespace(
        getExecutorMemoryStatus=lambda: SimpleNamespace(size=lambda: executors + 1),  # + the driver
        resourceProfileManager=lambda: SimpleNamespace(defaultResourceProfile=lambda: object()),
        maxNumConcurrentTasks=max_tasks,
    )
    return SimpleNamespace(
        master=master,
        _conf=_Conf(conf or {}),
        _jsc=SimpleNamespace(sc=lambda: jvm),
        defaultParallelism=executors * 2,
    )


def test_count_slots_local_and_cluster() -> None:
    assert count_slots(_sc("local[2]"), cpus=8) == Slots(2, "2 local threads")
    assert count_slots(_sc("local[4]", {"spark.task.cpus": "2"}), cpus=8).found == 2
    on_cluster = count_slots(_sc("spark://m:7077", executors=2, concurrent=4))
    assert on_cluster.found == 4 and on_cluster.growing and "2 executor(s)" in on_cluster.how
    # Without Spark's own count: executors x spark.executor.cores, else the default parallelism.
    gone = RuntimeError("no such method")
    conf = {"spark.executor.cores": "3"}
    assert count_slots(_sc("yarn", conf, executors=2, concurrent=gone)).found == 6
    assert count_slots(_sc("yarn", executors=3, concurrent=gone)).found == 6


def test_dynamic_allocation_is_refused_on_a_cluster() -> None:
    conf = {"spark.dynamicAllocation.enabled": "true"}
    with pytest.raises(ConfigError, match="dynamic allocation.*spark.dynamicAllocation.enabled=false"):
        count_slots(_sc("spark://m:7077", conf))
    assert count_slots(_sc("local[2]", conf), cpus=2).found == 2  # local: Spark ignores it


def test_waiting_for_executors_is_bounded_and_stops_when_enough() -> None:
    now = itertools.count(0.0, 1.0)  # every clock reading is a second later
    counts = iter([0, 2, 4, 4])

    def count() -> Slots:
        return Slots(next(counts), "executors", growing=True)

    slots, waited = wait_for_slots(count, 4, 30.0, clock=lambda: next(now), sleep=lambda s: None)
    assert slots.found == 4 and waited < 30
    # Not enough by the deadline: the last count, after the whole wait.
    ticks = itertools.count(0.0, 10.0)
    slots, waited = wait_for_slots(
        lambda: Slots(2, "executors", growing=True), 4, 30.0, clock=lambda: next(ticks), sleep=lambda s: None
    )
    assert slots.found == 2 and waited >= 30
    # A local master cannot grow: no wait at all.
    sleeps: list[float] = []
    wait_for_slots(lambda: Slots(2, "2 local threads"), 4, 30.0, sleep=sleeps.append)
    assert sleeps == []


def test_the_refusal_names_n_the_slots_and_the_fixes() -> None:
    local = slot_refusal(4, Slots(2, "2 local threads"), "local[2]")
    assert "4 streams need 4 free task slots" in local and "local[2] has 2" in local
    assert "--master local[4]" in local and "at most 2" in local
    cluster = slot_refusal(4, Slots(2, "1 executor(s) registered", True), "spark://m:7077", waited=30)
    assert "spark://m:7077 has 2" in cluster and "after waiting 30 s" in cluster
    assert "--conf spark.cores.max=4" in cluster and "at most 2" in cluster and "--slot-wait" in cluster


@pytest.fixture
def no_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Spark session in this process (another test's would be the one a run uses)."""
    monkeypatch.setattr("applier.sparkenv.slots.SparkSession.getActiveSession", lambda: None)


def test_an_explicit_local_master_too_small_is_refused_before_spark_starts(no_session: None) -> None:
    with pytest.raises(ConfigError, match=r"4 streams need 4 .* local\[2\] has 2 .*--streams \(at most 2\)"):
        check_local_master(Master("local[2]", "--master"), 4)
    check_local_master(Master("local[4]", "--master"), 4)
    check_local_master(Master("spark://m:7077", "--master"), 64)  # counted once executors register
    check_local_master(Master(None, "default"), 64)  # the default local[max(streams, cores)]


# -- which master ---------------------------------------------------------------------------


def test_the_master_given_beats_the_environment() -> None:
    env = {"MASTER": "spark://env:7077", "PYSPARK_SUBMIT_ARGS": "--master yarn pyspark-shell"}
    assert choose_master("local[3]", "--master", env) == Master("local[3]", "--master")
    assert choose_master(None, "--master", env) == Master("spark://env:7077", "$MASTER")
    assert choose_master(None, "--master", {"SPARK_MASTER": "yarn"}) == Master("yarn", "$SPARK_MASTER")
    both = {"MASTER": "spark://a:7077", "SPARK_MASTER": "spark://a:7077"}
    assert choose_master(None, "--master", both).url == "spark://a:7077"  # the same: no doubt


def test_master_and_spark_master_differing_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"\$MASTER=local\[1\] and \$SPARK_MASTER=yarn differ"):
        choose_master(None, "--master", {"MASTER": "local[1]", "SPARK_MASTER": "yarn"})


@pytest.mark.parametrize(
    "args", ["--master spark://s:7077 pyspark-shell", "--conf a=b --master=spark://s:7077 pyspark-shell"]
)
def test_a_master_in_pyspark_submit_args_is_honoured(args: str) -> None:
    assert choose_master(None, "--master", {"PYSPARK_SUBMIT_ARGS": args}) == Master(
        "spark://s:7077", "$PYSPARK_SUBMIT_ARGS"
    )
    assert choose_master(None, "--master", {}) == Master(None, "default")


# -- [spark] in the configuration file, the API and the command line ------------------------


def test_spark_table_in_a_file(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text(
        '[workload]\nkind = "key-chain"\n[spark]\nmaster = "spark://h:7077"\nslot_wait = 5\n'
        'conf = { "spark.executor.memory" = "2g", "spark.cores.max" = 4, spark.ui.enabled = true }\n'
    )
    s = load_config(f).spark
    assert s.master == "spark://h:7077" and s.slot_wait == 5.0
    assert dict(s.conf) == {"spark.executor.memory": "2g", "spark.cores.max": "4", "spark.ui.enabled": "true"}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('master = "bogus"', r"spark\.master: not a Spark master URL: 'bogus'"),
        ('conf = { "executor.memory" = "2g" }', r"spark\.conf\.executor\.memory: not a Spark property"),
        ('conf = { "spark.master" = "yarn" }', r"give the master as `master`"),
        ("slot_wait = -1", r"spark\.slot_wait: slot_wait must be 0\.\.600"),
        ('colour = "red"', r"spark: unknown key\(s\) \['colour'\]"),
    ],
)
def test_a_bad_spark_table_is_refused_naming_the_key(tmp_path: Path, table: str, message: str) -> None:
    f = tmp_path / "c.toml"
    f.write_text(f'[workload]\nkind = "key-chain"\n[spark]\n{table}\n')
    with pytest.raises(ConfigError, match=message):
        load_config(f)


def test_spark_settings_survive_overrides_and_redact_secrets() -> None:
    spark = SparkSettings(
        "yarn", (("spark.executor.memory", "2g"), ("spark.hadoop.fs.s3a.secret.key", "s3cr3t"))
    )
    cfg = demo_config().replace(spark=spark)
    assert with_overrides(cfg, run={"streams": 2}).spark == spark  # the secret kept where it is used...
    shown = cfg.to_dict()["spark"]
    assert shown["conf"]["spark.hadoop.fs.s3a.secret.key"] == "***"  # ...and hidden where it is shown
    assert "spark" not in demo_config().to_dict()  # unset: reports and config.json as before


def test_the_api_puts_its_spark_options_over_the_files() -> None:
    base = demo_config().replace(spark=SparkSettings("yarn", (("spark.a.b", "1"), ("spark.c", "2"))))
    s = spark_of(base, "local[3]", {"spark.c": "3"}, 4)
    assert s == SparkSettings("local[3]", (("spark.a.b", "1"), ("spark.c", "3")), 4.0)
    assert spark_of(base) is base.spark
    with pytest.raises(ConfigError, match=r"run\(\): spark\.master: not a Spark master URL"):
        spark_of(base, "nowhere")


def test_under_spark_submit_given_settings_are_named_not_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    s = SparkSettings("spark://h:7077", (("spark.executor.memory", "2g"),))
    assert spark_note(s) is None  # not under spark-submit: applied, no note
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "12345")
    note = spark_note(s)
    assert note is not None and "under spark-submit" in note
    assert "spark://h:7077" in note and "spark.executor.memory=2g" in note
    assert spark_note(SparkSettings()) is None  # nothing given: nothing to say


def _run_args(*args: str) -> Any:
    return cli.parser().parse_args(["run", *args])


class _Console:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def print(self, text: str, **_: Any) -> None:
        self.lines.append(text)


def test_the_command_line_over_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("MASTER", "SPARK_MASTER", "PYSPARK_SUBMIT_ARGS", "PYSPARK_GATEWAY_PORT"):
        monkeypatch.delenv(k, raising=False)
    base = demo_config().replace(spark=SparkSettings("local[8]", (("spark.a", "1"),), 10.0))
    a = _run_args(
        "--master", "spark://h:7077", "--conf", "spark.a=2", "--conf", "spark.b=x=y", "--slot-wait", "3"
    )
    console = _Console()
    s = with_spark(a, base, console).spark
    assert s == SparkSettings("spark://h:7077", (("spark.a", "2"), ("spark.b", "x=y")), 3.0)
    assert console.lines == ["spark: spark://h:7077 (--master)"]
    assert with_spark(_run_args(), base, _Console()).spark == base.spark  # nothing given: the file's


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--conf", "spark.executor.memory"], r"--conf spark\.executor\.memory: expected KEY=VALUE"),
        (["--conf", "executor.memory=2g"], r"--conf executor\.memory: not a Spark property"),
        (["--master", "nowhere"], r"--master: not a Spark master URL"),
        (["--master", "local[2]", "--streams", "4"], r"4 streams need 4 .*local\[2\] has 2"),
    ],
)
def test_bad_spark_options_name_the_option(
    monkeypatch: pytest.MonkeyPatch, no_session: None, args: list[str], message: str
) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    a = _run_args(*args)
    with pytest.raises(ConfigError, match=message):
        with_spark(a, config_of(a), _Console())


def test_under_spark_submit_the_command_line_says_what_it_does_not_apply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "12345")
    console = _Console()
    a = _run_args("--master", "spark://h:7077", "--conf", "spark.executor.memory=2g", "--slot-wait", "5")
    s = with_spark(a, demo_config(), console).spark
    assert s == SparkSettings(slot_wait=5.0)  # nothing of the launcher's overridden
    assert len(console.lines) == 1 and console.lines[0].startswith("under spark-submit")
