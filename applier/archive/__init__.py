"""Spark's class-data archive, recorded by ``python -m applier.archive`` (``make setup``).

Nothing in applier imports this package: its training job exercises the stages (generate,
partition, lay out, cache, the digest oracle, the diff) to load their classes, so it sits
outside the layers it exercises. ``applier.sparkenv.classdata`` owns the archive itself.
"""
