#!/usr/bin/env python3
"""Builds examples/shop/data/shop.db (the example database): python3 examples/shop/make_db.py"""
import os
import sqlite3

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shop.db")
os.makedirs(os.path.dirname(path), exist_ok=True)
if os.path.exists(path):
    os.remove(path)
db = sqlite3.connect(path)
db.executescript(
    """
    CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
    CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers,
                         total REAL NOT NULL, placed TEXT NOT NULL);
    CREATE INDEX orders_by_customer ON orders (customer_id);
    CREATE VIEW revenue_by_country AS
      SELECT country, SUM(total) AS revenue FROM orders JOIN customers USING (customer_id)
      GROUP BY country;
    INSERT INTO customers VALUES (1, 'Ada', 'UK'), (2, 'Grace', 'US'), (3, 'Linus', 'FI'),
                                 (4, 'Margaret', 'US');
    INSERT INTO orders VALUES (1, 1, 120.5, '2026-01-03'), (2, 2, 80.0, '2026-01-04'),
                              (3, 1, 42.0, '2026-02-11'), (4, 3, 300.0, '2026-02-12'),
                              (5, 4, 15.25, '2026-03-01'), (6, 2, 99.99, '2026-03-02');
    """
)
db.commit()
db.close()
print(path)
