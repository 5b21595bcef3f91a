"""The test session's own Spark maps the class-data archive that `make setup` recorded."""

from __future__ import annotations

import pytest

from applier.sparkenv.classdata import class_archive

pytestmark = pytest.mark.integration


def test_session_maps_the_recorded_archive(spark) -> None:  # type: ignore[no-untyped-def]
    a = class_archive()
    if a is None:
        pytest.skip("class-data archive off or unsupported here")
    opts = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions") or ""
    if a.ready:
        assert f"-XX:SharedArchiveFile={a.path}" in opts
    else:  # make setup did not record it: this session records it at exit
        assert "-XX:ArchiveClassesAtExit=" in opts
    assert spark.sparkContext.getConf().get("spark.sql.codegen.hugeMethodLimit") == "8000"
