"""The database tool set and the shared SQL sandbox under it: answers checked against SQLite itself, the
read-only file, the function allow-list, the bounded printf and trim, the row, size and time limits, and the
worker processes queries run in."""

import hashlib
import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tool_selection.tool_failures import is_failure
from tool_sets._sandbox import sql_worker
from tool_sets._sandbox.sql import ALLOWED_FUNCTIONS, QueryRefused, connect
from tool_sets._sandbox.sql_worker import GRACE, SqlSource, run_query
from tool_sets.database import TOOL_SET, QueryDatabase, sample_database


def run(name: str, arguments: dict | None = None, **config):
    result = TOOL_SET.registry().execute(name, arguments or {}, **config)
    assert json.loads(json.dumps(result)) == result
    return result


def plain(sql: str, database: Path | None = None) -> list[tuple]:
    """The answer of SQLite itself, on a plain connection to the same file."""
    with closing(sqlite3.connect(database or sample_database())) as db:
        return db.execute(sql).fetchall()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_set_holds_three_tools():
    assert TOOL_SET.name == "database"
    assert TOOL_SET.names() == ["list_tables", "describe_table", "query_database"]
    assert {t.category for t in TOOL_SET} == {"database"}
    assert set(QueryDatabase.input_schema()["properties"]) == {"sql"}


# ------------------------------------------------------------------------------------------ the sample database
def test_list_tables_gives_columns_and_row_counts():
    result = run("list_tables")
    assert result["ok"] and result["database"] == "library.db"
    assert [(t["name"], t["rows"]) for t in result["tables"]] == [
        (name, plain(f"SELECT count(*) FROM {name}")[0][0]) for name in ("authors", "books", "loans", "members")]
    books = next(t for t in result["tables"] if t["name"] == "books")
    assert books["columns"] == ["book_id", "title", "author_id", "genre", "published", "pages", "copies"]


def test_describe_table_gives_types_keys_and_samples():
    result = run("describe_table", {"table": "Loans"})  # table names are case-insensitive, as in SQLite
    assert result["table"] == "loans" and result["rows"] == 18
    assert result["columns"][0] == {"name": "loan_id", "type": "INTEGER", "required": False, "primary_key": True,
                                    "default": None}
    assert sorted(fk["references"] for fk in result["foreign_keys"]) == ["books.book_id", "members.member_id"]
    assert result["sample_rows"] == [list(row) for row in plain("SELECT * FROM loans LIMIT 3")]


def test_an_unknown_table_suggests_the_close_ones():
    result = run("describe_table", {"table": "book"})
    assert is_failure(result) and result["error"] == "unknown_table" and result["suggestions"] == ["books"]


@pytest.mark.parametrize("sql", [
    "SELECT genre, COUNT(*) AS n, ROUND(AVG(pages), 1) FROM books GROUP BY genre ORDER BY n DESC, genre",
    "SELECT a.name, COUNT(l.loan_id) FROM authors a JOIN books b USING (author_id) LEFT JOIN loans l "
    "USING (book_id) GROUP BY a.name ORDER BY a.name",
    "WITH open_loans AS (SELECT * FROM loans WHERE returned IS NULL) SELECT m.name, o.due FROM open_loans o "
    "JOIN members m USING (member_id) ORDER BY o.due",
    "SELECT title, printf('%.1f', pages / 100.0), upper(substr(genre, 1, 3)), julianday('2025-03-01') "
    "FROM books WHERE title LIKE '%the%' ORDER BY title",
])
def test_queries_answer_as_sqlite_does(sql):
    result = run("query_database", {"sql": sql})
    assert result["ok"] and result["rows"] == [list(row) for row in plain(sql)]


def test_rows_are_capped_and_marked_truncated():
    result = run("query_database", {"sql": "SELECT * FROM books"}, max_rows=5)
    assert result["row_count"] == 5 and result["truncated"] is True
    assert run("query_database", {"sql": "SELECT * FROM books"})["truncated"] is False


def test_result_bytes_are_capped():
    result = run("query_database", {"sql": "SELECT title, hex(zeroblob(1000)) FROM books"}, max_result_bytes=5_000)
    assert result["ok"] and result["truncated"] is True and result["row_count"] == 2


# ------------------------------------------------------------------------------------------ another database
@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    path = tmp_path / "inventory.db"
    with closing(sqlite3.connect(path)) as db:
        db.executescript("CREATE TABLE parts (sku TEXT PRIMARY KEY, stock INTEGER);"
                         "INSERT INTO parts VALUES ('A-1', 4), ('B-2', 0), ('C-3', 9);")
    return path


def test_the_tools_read_a_configured_file(inventory):
    assert [t["name"] for t in run("list_tables", database=inventory)["tables"]] == ["parts"]
    result = run("query_database", {"sql": "SELECT sku FROM parts WHERE stock > 0 ORDER BY sku"}, database=inventory)
    assert result["rows"] == [["A-1"], ["C-3"]]


def test_the_file_is_never_written(inventory):
    before = digest(inventory)
    for sql in ["DELETE FROM parts", "UPDATE parts SET stock = 0", "DROP TABLE parts",
                "WITH x AS (SELECT 1) INSERT INTO parts (sku) SELECT * FROM x", "PRAGMA user_version = 7"]:
        assert is_failure(run("query_database", {"sql": sql}, database=inventory))
    assert digest(inventory) == before


def test_the_file_is_opened_read_only_even_without_the_authorizer(inventory):
    with closing(sqlite3.connect(f"{inventory.as_uri()}?mode=ro", uri=True)) as db:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            db.execute("DELETE FROM parts")


def test_a_missing_file_is_a_configuration_error(tmp_path):
    with pytest.raises(ValidationError, match="not an existing file"):
        QueryDatabase(database=tmp_path / "missing.db")


# ------------------------------------------------------------------------------------------ the shared sandbox
@pytest.fixture
def sandbox():
    db = connect()
    db.execute("CREATE TABLE t (x)")
    db.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
    db.commit()
    with closing(db.lock_down()) as locked:
        yield locked


def refusal(db, sql: str, **limits) -> QueryRefused:
    with pytest.raises(QueryRefused) as caught:
        db.select(sql, **{"timeout_s": 1.0, "max_rows": 10, **limits})
    return caught.value


@pytest.mark.parametrize("function", ["fts3_tokenizer('simple')", "load_extension('x')", "json('{}')",
                                     "sqlite_version()", "randomblob(4)", "last_insert_rowid()"])
def test_functions_off_the_allow_list_are_refused(sandbox, function):
    refused = refusal(sandbox, f"SELECT {function}")
    assert refused.code == "not_allowed" and f"{function.split('(')[0]}() is not allowed" in refused.message


def test_refusals_suggest_close_allowed_functions_and_cover_operators_and_table_functions(sandbox):
    assert refusal(sandbox, "SELECT json_quote('a')").suggestions == ["quote"]
    assert refusal(sandbox, "SELECT 1 -> '$'").code == "not_allowed"  # the JSON operators are functions too
    refused = refusal(sandbox, "SELECT * FROM pragma_table_info('t')")
    assert refused.code == "not_allowed" and "table-valued functions" in refused.message


def test_every_allowed_function_that_sqlite_has_can_be_called(sandbox):
    with closing(sqlite3.connect(":memory:")) as probe:
        present = {name for (name,) in probe.execute("SELECT name FROM pragma_function_list")}
    for name in sorted(ALLOWED_FUNCTIONS & present):
        try:
            sandbox.select(f"SELECT {name}()", timeout_s=1, max_rows=1)
        except QueryRefused as refused:  # wrong argument counts are errors, but never a refusal
            assert refused.code == "sql_error", (name, refused.message)


PRINTF_CASES = [
    ("%d|%5.2f|%-4s|%%|%x", 42, 3.14159, "ab", 255),
    ("%.*f and %*d", 3, 2.5, 6, 7),
    ("%,d %q %Q %c", 1234567, "it's", None, "xyz"),
    ("%.3c%!.2g", "z", 1e-5),
    ("%s %s", "only one"),
    ("plain text",),
]


@pytest.mark.parametrize("arguments", PRINTF_CASES)
def test_bounded_printf_matches_sqlite(sandbox, arguments):
    placeholders = ", ".join("?" * len(arguments))
    with closing(sqlite3.connect(":memory:")) as reference:
        expected = reference.execute(f"SELECT printf({placeholders})", arguments).fetchone()[0]
    assert sandbox.execute(f"SELECT printf({placeholders}), format({placeholders})",
                           arguments + arguments).fetchone() == (expected, expected)


@pytest.mark.parametrize("sql", [
    "SELECT printf('%.*c', 2147483647, 'x')",
    "SELECT printf('%2147483647d', 1)",
    "SELECT format('%.200000f', 1.5)",
    "SELECT printf('%d %*d', 1, -900000, 2)",
    "SELECT printf('%.*c', '1000000', 'x')",
])
def test_printf_refuses_widths_beyond_the_value_limit(sandbox, sql):
    started = time.monotonic()
    refused = refusal(sandbox, sql)
    assert refused.code == "not_allowed" and "width or precision" in refused.message
    assert time.monotonic() - started < 0.1


@pytest.mark.parametrize("call", ["trim('xxhixx', 'x')", "ltrim('  a b  ', ' a')", "rtrim('abcc', 'cb')",
                                  "trim(12.500, '0')", "trim(NULL, 'a')", "trim('abc', NULL)", "trim('abc', '')",
                                  "rtrim('naïveéé', 'é')", "trim(x'616161', 'a')", "ltrim('   spaces')"])
def test_linear_trim_matches_sqlite(sandbox, call):
    with closing(sqlite3.connect(":memory:")) as reference:
        expected = reference.execute(f"SELECT {call}").fetchone()
    assert sandbox.execute(f"SELECT {call}").fetchone() == expected


def test_trim_is_linear_on_the_largest_values(sandbox):
    started = time.monotonic()
    result = sandbox.select("SELECT length(trim(replace(hex(zeroblob(49999)), '0', 'a'), "
                            "replace(hex(zeroblob(5000)), '0', 'b') || 'a'))", timeout_s=1, max_rows=1)
    assert result.rows == [[0]] and time.monotonic() - started < 0.3  # SQLite's own trim: about 2 s


def test_values_are_limited_in_size(sandbox):
    refused = refusal(sandbox, "SELECT zeroblob(200000)")
    assert refused.code == "sql_error" and "100,000 bytes" in refused.message
    assert sandbox.select("SELECT length(zeroblob(99999))", timeout_s=1, max_rows=1).rows == [[99999]]
    too_long = "SELECT printf('%.*c%.*c', 90000, 'x', 90000, 'y') IS NULL"  # NULL, as SQLite's own printf gives
    assert sandbox.select(too_long, timeout_s=1, max_rows=1).rows == [[1]]


def test_select_needs_lock_down_first():
    with closing(connect()) as db, pytest.raises(RuntimeError, match="lock_down"):
        db.select("SELECT 1", timeout_s=1, max_rows=1)


def test_only_one_select_runs(sandbox):
    assert refusal(sandbox, "SELECT 1; SELECT 2").code == "one_statement_only"
    assert refusal(sandbox, "/* note */ DELETE FROM t").code == "not_select"
    assert refusal(sandbox, "WITH a AS (SELECT 1) DELETE FROM t").code == "not_allowed"
    assert sandbox.select("SELECT count(*) FROM t", timeout_s=1, max_rows=1).rows == [[100]]


def test_a_long_query_is_interrupted_near_its_limit(sandbox):
    started = time.monotonic()
    refused = refusal(sandbox, "SELECT count(*) FROM t a, t b, t c, t d", timeout_s=0.3)
    elapsed = time.monotonic() - started
    assert refused.code == "timeout" and 0.3 <= elapsed < 0.3 * 1.1 + 0.1


@pytest.mark.parametrize("sql, code", [("SELECT 1\x00", "sql_error"), ("SELECT ?", "sql_error"),
                                       ("SELECT '\ud800'", "sql_error"), ("SELECT 1;;", "one_statement_only")])
def test_bad_sql_text_is_a_refusal_not_a_crash(sandbox, sql, code):
    assert refusal(sandbox, sql).code == code


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80).map(lambda tail: "SELECT " + tail))
def test_any_select_text_answers_or_is_refused(tail):
    with closing(connect().lock_down()) as db:
        try:
            result = db.select(tail, timeout_s=0.2, max_rows=5)
        except QueryRefused as refused:
            assert refused.code in {"sql_error", "not_allowed", "timeout", "one_statement_only"}
        else:
            assert len(result.rows) <= 5


# ------------------------------------------------------------------------------------------ workers
@pytest.fixture
def library() -> SqlSource:
    source = SqlSource.file(sample_database())
    assert run_query(source, "SELECT 1", timeout_s=1, max_rows=1).rows == [[1]]  # a worker has booted
    return source


def test_a_query_stuck_in_one_function_call_is_killed_at_its_limit_and_its_worker_replaced(library):
    glob = ("SELECT h GLOB p FROM (SELECT replace(hex(zeroblob(49000)), '0', 'a') h, "
            "'*' || replace(hex(zeroblob(16000)), '00', '[a]') || 'b' p)")  # one GLOB call: about 20 s
    started = time.monotonic()
    with pytest.raises(QueryRefused) as refused:
        run_query(library, glob, timeout_s=0.3, max_rows=1)
    elapsed = time.monotonic() - started
    assert refused.value.code == "timeout" and 0.3 * (1 + GRACE) <= elapsed < 0.3 * 1.1
    assert run_query(library, "SELECT count(*) FROM books", timeout_s=1, max_rows=1).rows == [
        list(plain("SELECT count(*) FROM books")[0])]


def test_a_worker_that_died_is_a_refusal_and_is_replaced(library):
    worker = sql_worker._POOL.take()
    worker.process.kill()  # as the kernel's out-of-memory killer would
    worker.process.wait()
    sql_worker._POOL.give_back(worker)
    with pytest.raises(QueryRefused, match=r"worker ended while running the query \(exit status -9\)") as refused:
        run_query(library, "SELECT 1", timeout_s=1, max_rows=1)
    assert refused.value.code == "sql_error"
    assert run_query(library, "SELECT 2", timeout_s=1, max_rows=1).rows == [[2]]


def test_an_in_memory_image_is_queried_like_a_file(library):
    with closing(sqlite3.connect(sample_database())) as db:
        image = SqlSource.image_of(db)
    sql = "SELECT genre, count(*) FROM books GROUP BY genre ORDER BY genre"
    assert run_query(image, sql, timeout_s=1, max_rows=50).rows == run_query(library, sql, timeout_s=1,
                                                                             max_rows=50).rows
    assert [tuple(row) for row in run_query(image, sql, timeout_s=1, max_rows=50).rows] == plain(sql)
    with pytest.raises(QueryRefused) as refused:
        run_query(image, "DELETE FROM books", timeout_s=1, max_rows=1)
    assert refused.value.code == "not_select"


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=80).map(lambda tail: "SELECT " + tail))
def test_any_select_text_through_a_worker_answers_or_is_refused(tail):
    source = SqlSource.file(sample_database())
    try:
        result = run_query(source, tail, timeout_s=0.2, max_rows=5)
    except QueryRefused as refused:
        assert refused.code in {"sql_error", "not_allowed", "timeout", "one_statement_only"}
    else:
        assert len(result.rows) <= 5 and json.loads(json.dumps(result.rows)) == result.rows
