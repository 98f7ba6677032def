#!/usr/bin/env python3
"""Builds the views browser test's fixture in DIR: a SQLite database and the manifest that
serves it with views (scripts/views-browser.sh). Deterministic: the same bytes every run.

    python3 scripts/views/fixture.py DIR

`events`: 10 000 rows with NULLs, text in many scripts, emoji and hostile cells (markup that
must show as text); `sales`: 12 months of two numeric series and a text column.
"""
import datetime
import os
import sqlite3
import sys

CITIES = ["Zürich", "東京", "São Paulo", "Αθήνα", "Москва", "القاهرة", "Reykjavík",
          "Kraków", "München", "თბილისი"]
HOSTILE = {
    4242: "<img src=x onerror=alert(1)>",
    4243: "</script><script>alert(2)</script>",
    4244: "\" onmouseover=\"alert(3)",
}


def build(folder: str) -> None:
    db_path = os.path.join(folder, "views.db")
    if os.path.exists(db_path):
        os.remove(db_path)
    db = sqlite3.connect(db_path)
    db.execute(
        "CREATE TABLE events (id INTEGER PRIMARY KEY, city TEXT, amount REAL, day TEXT, note TEXT)"
    )
    start = datetime.date(2026, 1, 1)
    rows = []
    for i in range(1, 10_001):
        amount = None if i % 7 == 0 else round(((i * 37) % 1000) / 10 + 0.25, 2)
        day = (start + datetime.timedelta(days=i % 365)).isoformat()
        note = HOSTILE.get(i, None if i % 11 == 0 else ("🚀 launch" if i % 5 == 0 else "ok"))
        rows.append((i, CITIES[i % len(CITIES)], amount, day, note))
    db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", rows)
    db.execute("CREATE TABLE sales (month TEXT, region TEXT, revenue REAL, cost REAL)")
    sales = [(f"2026-{m:02d}", "Nord" if m % 2 else "Süd", 120 + 15 * m + (m % 3) * 20,
              80 + 6 * m) for m in range(1, 13)]
    db.executemany("INSERT INTO sales VALUES (?, ?, ?, ?)", sales)
    db.commit()
    db.close()
    people = '[{"name":"Ada","langs":3,"active":true},{"name":"Grace","langs":5,"active":false},' \
             '{"name":"<b>bold</b>","langs":null,"active":true}]'
    manifest = f"""# The views browser test (scripts/views-browser.sh): built by scripts/views/fixture.py.
[sqlite.db]
path = "views.db"
row_limit = 10000
view = "table"

[sqlite.db.queries.monthly_line]
sql = "SELECT month, revenue, cost FROM sales ORDER BY month"
view = {{ chart = "line", x = "month", y = ["revenue", "cost"] }}

[sqlite.db.queries.monthly_bar]
sql = "SELECT month, revenue, cost FROM sales ORDER BY month"
view = {{ chart = "bar", x = "month", y = ["revenue", "cost"] }}

[sqlite.db.queries.daily]
sql = "SELECT day, SUM(amount) AS total, COUNT(*) AS events FROM events GROUP BY day ORDER BY day"
view = {{ chart = "line", x = "day", y = ["total"] }}

[sqlite.db.queries.not_numeric]
sql = "SELECT month, region, revenue FROM sales ORDER BY month"
view = {{ chart = "bar", x = "month", y = ["region"] }}

[sqlite.db.queries.missing]
sql = "SELECT month, revenue FROM sales ORDER BY month"
view = {{ chart = "line", x = "month", y = ["profit"] }}

[sqlite.capped]
path = "views.db"
row_limit = 250
view = "table"

[tools.people]
description = "People as a JSON array"
command = ["printf", "%s", '{people}']
output = "json"
read_only = true
view = "table"
"""
    with open(os.path.join(folder, "mcp-server.toml"), "w", encoding="utf-8") as f:
        f.write(manifest)


if __name__ == "__main__":
    build(sys.argv[1])
