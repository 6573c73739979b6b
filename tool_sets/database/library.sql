-- The sample database of the ``database`` tool set: a small lending library.
CREATE TABLE authors (
    author_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT NOT NULL,
    born INTEGER
);

CREATE TABLE books (
    book_id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    author_id INTEGER NOT NULL REFERENCES authors (author_id),
    genre TEXT NOT NULL,
    published INTEGER NOT NULL,
    pages INTEGER NOT NULL,
    copies INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE members (
    member_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    joined TEXT NOT NULL,
    city TEXT NOT NULL
);

CREATE TABLE loans (
    loan_id INTEGER PRIMARY KEY,
    book_id INTEGER NOT NULL REFERENCES books (book_id),
    member_id INTEGER NOT NULL REFERENCES members (member_id),
    borrowed TEXT NOT NULL,
    due TEXT NOT NULL,
    returned TEXT
);

INSERT INTO authors VALUES
    (1, 'Chinua Achebe', 'Nigeria', 1930),
    (2, 'Ursula K. Le Guin', 'United States', 1929),
    (3, 'Gabriel García Márquez', 'Colombia', 1927),
    (4, 'Haruki Murakami', 'Japan', 1949),
    (5, 'Jane Austen', 'United Kingdom', 1775),
    (6, 'Chimamanda Ngozi Adichie', 'Nigeria', 1977),
    (7, 'Italo Calvino', 'Italy', 1923),
    (8, 'Octavia E. Butler', 'United States', 1947);

INSERT INTO books VALUES
    (1, 'Things Fall Apart', 1, 'literary fiction', 1958, 209, 3),
    (2, 'No Longer at Ease', 1, 'literary fiction', 1960, 194, 1),
    (3, 'A Wizard of Earthsea', 2, 'fantasy', 1968, 183, 2),
    (4, 'The Left Hand of Darkness', 2, 'science fiction', 1969, 304, 2),
    (5, 'The Dispossessed', 2, 'science fiction', 1974, 387, 1),
    (6, 'One Hundred Years of Solitude', 3, 'literary fiction', 1967, 417, 2),
    (7, 'Love in the Time of Cholera', 3, 'romance', 1985, 348, 1),
    (8, 'Norwegian Wood', 4, 'literary fiction', 1987, 296, 2),
    (9, 'Kafka on the Shore', 4, 'fantasy', 2002, 505, 1),
    (10, 'Pride and Prejudice', 5, 'romance', 1813, 432, 4),
    (11, 'Emma', 5, 'romance', 1815, 474, 2),
    (12, 'Persuasion', 5, 'romance', 1817, 249, 1),
    (13, 'Half of a Yellow Sun', 6, 'historical fiction', 2006, 433, 2),
    (14, 'Americanah', 6, 'literary fiction', 2013, 477, 3),
    (15, 'Invisible Cities', 7, 'literary fiction', 1972, 165, 1),
    (16, 'If on a Winter''s Night a Traveler', 7, 'literary fiction', 1979, 260, 1),
    (17, 'Kindred', 8, 'science fiction', 1979, 264, 2),
    (18, 'Parable of the Sower', 8, 'science fiction', 1993, 345, 2);

INSERT INTO members VALUES
    (1, 'Amara Okafor', '2021-03-14', 'Leeds'),
    (2, 'Ben Hartley', '2022-07-01', 'York'),
    (3, 'Chen Wei', '2020-11-23', 'Leeds'),
    (4, 'Dana Kowalski', '2023-01-09', 'Bradford'),
    (5, 'Elif Demir', '2024-05-30', 'York'),
    (6, 'Farah Haddad', '2019-09-17', 'Leeds');

INSERT INTO loans VALUES
    (1, 1, 1, '2025-01-06', '2025-01-27', '2025-01-20'),
    (2, 3, 2, '2025-01-08', '2025-01-29', '2025-02-03'),
    (3, 10, 3, '2025-01-15', '2025-02-05', '2025-02-01'),
    (4, 14, 1, '2025-01-21', '2025-02-11', '2025-02-10'),
    (5, 17, 4, '2025-02-02', '2025-02-23', '2025-02-20'),
    (6, 6, 6, '2025-02-05', '2025-02-26', '2025-03-04'),
    (7, 4, 2, '2025-02-10', '2025-03-03', '2025-02-28'),
    (8, 8, 5, '2025-02-14', '2025-03-07', '2025-03-06'),
    (9, 10, 6, '2025-02-18', '2025-03-11', '2025-03-10'),
    (10, 13, 3, '2025-02-25', '2025-03-18', '2025-03-25'),
    (11, 18, 1, '2025-03-01', '2025-03-22', '2025-03-15'),
    (12, 1, 4, '2025-03-04', '2025-03-25', '2025-03-24'),
    (13, 15, 2, '2025-03-10', '2025-03-31', NULL),
    (14, 11, 5, '2025-03-12', '2025-04-02', NULL),
    (15, 9, 3, '2025-03-15', '2025-04-05', NULL),
    (16, 5, 6, '2025-03-18', '2025-04-08', NULL),
    (17, 10, 1, '2025-03-20', '2025-04-10', NULL),
    (18, 7, 4, '2025-03-22', '2025-04-12', NULL);
