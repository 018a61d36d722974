-- A personal token acts for its user's approval groups only when it was given them (`groups`);
-- a console session always does. Each vote keeps the roles and groups its credential carried,
-- so an approval counts it only while its voter still holds what made it count.
ALTER TABLE user_tokens ADD COLUMN groups INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approval_votes ADD COLUMN scope_roles TEXT NOT NULL DEFAULT '';
ALTER TABLE approval_votes ADD COLUMN scope_groups INTEGER NOT NULL DEFAULT 1;
