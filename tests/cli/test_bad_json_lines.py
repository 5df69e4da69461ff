"""JSON lines that used to reach the user as ``Error: unexpected <Exception>`` (issue 15 #16): each
is a bad line with its number in `add --jsonl` and `import`, skipped with ``--skip-invalid``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import one_error, run_cli

BAD_LINES = [
    ('{"text": "a", "n": %s}' % ("1" * 5000), "invalid JSON (a number too long to read)"),
    ("[" * 100_000, "invalid JSON (nested too deeply)"),
    (
        '{"text": "a", "created_at": "9999-12-31T23:59:59-05:00"}',
        "created_at '9999-12-31T23:59:59-05:00' is out of range",
    ),
    (
        '{"text": "a", "created_at": "0001-01-01T00:00:00+05:00"}',
        "created_at '0001-01-01T00:00:00+05:00' is out of range (years 1 to 9999 in UTC)",
    ),
    ('{"text": "a\\ud800b"}', "the text is not valid Unicode"),
    ('{"text": "a", "user": "x\\udfffy"}', "user is not valid Unicode"),
    ('{"text": "a", "tags": ["\\ud800"]}', "a tag is not valid Unicode"),
    ('{"text": "a", "meta": {"k\\ud800": "v"}}', "a meta key is not valid Unicode"),
    ('{"text": "a", "meta": {"k": "\\udc80"}}', "a meta value is not valid Unicode"),
]


@pytest.mark.parametrize("command", ["add --jsonl", "import"])
@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_hostile_json_lines_are_bad_lines_with_their_number(
    store_dir: Path, command: str, line: str, message: str
) -> None:
    data = '{"text": "a fine first line"}\n' + line + "\n"
    refused = run_cli([*command.split(), "-"], store_dir, stdin=data)
    assert refused.code == 2
    one_error(refused.stderr, f"line 2: {message}")
    skipped = run_cli([*command.split(), "-", "--skip-invalid", "--json"], store_dir, stdin=data)
    assert skipped.code == 0 and "unexpected" not in skipped.stderr
    assert json.loads(skipped.stdout)["skipped_lines"] == [2]
