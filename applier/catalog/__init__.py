"""Articles from what the user has: DDL scripts (sqlglot) and a live catalog (ODBC)."""
