"""Plan: parameter orders per call syntax (seed 003) and the SCALL/MCALL bitmap."""

from __future__ import annotations

import pytest

from applier.articles import Delivery
from applier.config import parse_config
from applier.plan.calls import bitmap, call_params


def article(update="SCALL", delete="CALL", ncols=3, lob=False):
    cols = [{"name": "k", "type": "int", "key": True}]
    cols += [
        {"name": f"c{i}", "type": "nvarchar(max)" if lob and i == 2 else "int"} for i in range(2, ncols + 1)
    ]
    return parse_config(
        {"articles": [{"name": "dbo.t", "columns": cols, "update": update, "delete": delete}]}
    ).articles[0]


B = {"k": 1, "c2": 20, "c3": 30}
A = {"k": 1, "c2": 21, "c3": 30}


def test_bitmap_bits_and_width():
    a = article(ncols=10)
    assert len(bitmap(a, [])) == 2  # binary(ceil(10/8))
    assert bitmap(a, ["k"]) == bytes([1, 0])
    assert bitmap(a, ["c8"]) == bytes([128, 0])
    assert bitmap(a, ["c9", "c2"]) == bytes([2, 1])  # column 9 is bit 1 of byte 2


@pytest.mark.parametrize(
    "syntax,expected",
    [
        ("CALL", (1, 21, 30, 1)),  # all new values, then the original key
        ("SCALL", (None, 21, None, 1, bytes([2]))),  # changed values only, key, bitmap
        ("MCALL", (1, 21, 30, 1, bytes([2]))),  # all values, key, bitmap
        ("XCALL", (1, 20, 30, 1, 21, 30)),  # before image, then after image
    ],
)
def test_update_parameter_orders(syntax, expected):
    assert call_params(article(update=syntax), "U", B, A, ["c2"]) == expected


def test_insert_and_delete_orders():
    a = article()
    assert call_params(a, "I", None, B, ["k", "c2", "c3"]) == (1, 20, 30)
    assert call_params(a, "D", B, None, []) == (1,)
    assert call_params(article(delete="XCALL"), "D", B, None, []) == (1, 20, 30)


def test_xcall_before_image_of_lob_is_null():
    a = article(update="XCALL", lob=True)
    b = {"k": 1, "c2": "long text", "c3": 3}
    assert call_params(a, "U", b, b, []) == (1, None, 3, 1, "long text", 3)


def test_key_change_sets_key_bit():
    a = article()
    assert call_params(a, "U", B, {**A, "k": 2}, ["k", "c2"]) == (2, 21, None, 1, bytes([3]))


def test_delivery_parse():
    assert Delivery.parse("update", "SCALL my_proc").procedure == "my_proc"
