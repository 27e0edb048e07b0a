CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER REFERENCES authors(id),
                    year INTEGER, pages INTEGER);
INSERT INTO authors VALUES (1, 'Victor Hugo', 'France'), (2, 'Jane Austen', 'England'),
                           (3, 'Marguerite Duras', 'France'), (4, 'Haruki Murakami', 'Japan');
INSERT INTO books VALUES (1, 'Les Miserables', 1, 1862, 1463), (2, 'Emma', 2, 1815, 474),
                         (3, 'L''Amant', 3, 1984, 148), (4, 'Kafka on the Shore', 4, 2002, 505),
                         (5, '1Q84', 4, 2009, 928), (6, 'Notre-Dame de Paris', 1, 1831, 940);
