-- Fair share between users: an admin-set weight per user (default 1).
ALTER TABLE users ADD COLUMN weight REAL NOT NULL DEFAULT 1 CHECK (weight > 0);
