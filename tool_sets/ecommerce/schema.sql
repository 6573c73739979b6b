-- Schema of the ecommerce shop. Money is stored in integer cents; dates are ISO strings (YYYY-MM-DD).
CREATE TABLE products (
    product_id   TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    brand        TEXT NOT NULL,
    category     TEXT NOT NULL,
    price_cents  INTEGER NOT NULL CHECK (price_cents >= 0),
    stock        INTEGER NOT NULL CHECK (stock >= 0),
    rating       REAL NOT NULL,
    review_count INTEGER NOT NULL,
    final_sale   INTEGER NOT NULL DEFAULT 0,
    description  TEXT NOT NULL
);

CREATE TABLE cart_items (
    product_id TEXT PRIMARY KEY REFERENCES products (product_id),
    quantity   INTEGER NOT NULL CHECK (quantity >= 1)
);

CREATE TABLE orders (
    order_id        TEXT PRIMARY KEY,
    placed_on       TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('processing', 'shipped', 'delivered', 'cancelled')),
    shipping_method TEXT NOT NULL,
    payment_method  TEXT NOT NULL,
    shipping_cents  INTEGER NOT NULL,
    cancelled_on    TEXT
);

CREATE TABLE order_items (
    order_id         TEXT NOT NULL REFERENCES orders (order_id),
    product_id       TEXT NOT NULL REFERENCES products (product_id),
    quantity         INTEGER NOT NULL CHECK (quantity >= 1),
    unit_price_cents INTEGER NOT NULL,
    PRIMARY KEY (order_id, product_id)
);

CREATE TABLE shipments (
    order_id           TEXT PRIMARY KEY REFERENCES orders (order_id),
    carrier            TEXT NOT NULL,
    tracking_number    TEXT NOT NULL,
    shipped_on         TEXT NOT NULL,
    estimated_delivery TEXT NOT NULL,
    delivered_on       TEXT
);

CREATE TABLE shipment_events (
    order_id    TEXT NOT NULL REFERENCES shipments (order_id),
    seq         INTEGER NOT NULL,
    date        TEXT NOT NULL,
    location    TEXT NOT NULL,
    description TEXT NOT NULL,
    PRIMARY KEY (order_id, seq)
);

CREATE TABLE returns (
    return_id    TEXT PRIMARY KEY,
    order_id     TEXT NOT NULL REFERENCES orders (order_id),
    product_id   TEXT NOT NULL REFERENCES products (product_id),
    quantity     INTEGER NOT NULL CHECK (quantity >= 1),
    reason       TEXT NOT NULL,
    resolution   TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    requested_on TEXT NOT NULL,
    status       TEXT NOT NULL
);
