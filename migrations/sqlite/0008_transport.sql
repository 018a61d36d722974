-- Each activity entry records how its request arrived: `http` (/v1), `mcp` (/mcp) or
-- `console`; NULL for the gateway's own work and for entries written before this.
ALTER TABLE activity ADD COLUMN transport TEXT;
