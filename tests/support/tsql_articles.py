"""Articles the T-SQL procedure tests render (tests/unit/test_tsql_dialect.py and
test_procedures.py): seed 003's Vendor, AdventureWorks tables with a composite and an identity
key, a wide table of LOB and precise types, and one of hostile identifiers."""

from __future__ import annotations

from applier.articles import Article, Column, parse_type


def article(
    schema: str, table: str, cols: list[tuple[str, str, str]], key: tuple[str, ...], **kw: object
) -> Article:
    """An article of ``cols``: (name, type, flags) with flags among 'n' (nullable) and 'i'
    (identity)."""
    columns = tuple(Column(n, parse_type(t), nullable="n" in f, identity="i" in f) for n, t, f in cols)
    return Article(schema, table, columns, key, **kw)  # type: ignore[arg-type]


CASES = {
    # Seed 003's Vendor example: key VendorID int, not identity; 8 columns -> binary(1).
    "vendor": article(
        "Purchasing",
        "Vendor",
        [
            ("VendorID", "int", ""),
            ("AccountNumber", "nvarchar(15)", ""),
            ("Name", "nvarchar(50)", ""),
            ("CreditRating", "tinyint", ""),
            ("PreferredVendorStatus", "bit", ""),
            ("ActiveFlag", "bit", ""),
            ("PurchasingWebServiceURL", "nvarchar(1024)", "n"),
            ("ModifiedDate", "datetime", ""),
        ],
        ("VendorID",),
    ),
    # AdventureWorks Person.BusinessEntityAddress: 3-column key.
    "composite_key": article(
        "Person",
        "BusinessEntityAddress",
        [
            ("BusinessEntityID", "int", ""),
            ("AddressID", "int", ""),
            ("AddressTypeID", "int", ""),
            ("rowguid", "uniqueidentifier", ""),
            ("ModifiedDate", "datetime", ""),
        ],
        ("BusinessEntityID", "AddressID", "AddressTypeID"),
    ),
    # AdventureWorks Person.BusinessEntity: identity key -> no key-changed branch.
    "identity_key": article(
        "Person",
        "BusinessEntity",
        [
            ("BusinessEntityID", "int", "i"),
            ("rowguid", "uniqueidentifier", ""),
            ("ModifiedDate", "datetime", ""),
        ],
        ("BusinessEntityID",),
    ),
    # 10 columns (binary(2), byte 2), key not first, rowversion, LOB and precise types.
    "wide": article(
        "dbo",
        "Wide",
        [
            ("Note", "nvarchar(max)", "n"),
            ("Id", "bigint", ""),
            ("Amount", "decimal(12,2)", ""),
            ("Price", "money", "n"),
            ("Seen", "datetimeoffset(3)", "n"),
            ("At", "datetime2", "n"),
            ("Code", "char(3)", "n"),
            ("Blob", "varbinary(max)", "n"),
            ("Ver", "rowversion", "n"),
            ("Flag", "bit", "n"),
        ],
        ("Id",),
    ),
}
HOSTILE = article(
    "we ird]",
    "Order]Details; --",
    [
        ("it's", "int", ""),
        ("a b", "nvarchar(10)", "n"),
        ("[x]", "int", "n"),
        ("名前", "nvarchar(20)", "n"),
        ("--c", "date", "n"),
    ],
    ("it's", "[x]"),
)
KEY_ONLY = article("dbo", "Pair", [("A", "int", ""), ("B", "int", "")], ("A", "B"))
