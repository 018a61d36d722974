-- A hold whose call is carried out outside the transaction that reserved it (a connector
-- that takes time, an approved call) is leased by the server instance carrying it out, which
-- renews the lease while the call runs. Any instance's sweeper ends a pending hold whose
-- lease lapsed and that no pending approval keeps. NULL for holds that need none: parked
-- (their approval keeps them) or posted in the transaction that reserved them.
ALTER TABLE holds ADD COLUMN lease_owner TEXT;
ALTER TABLE holds ADD COLUMN lease_until TEXT;
