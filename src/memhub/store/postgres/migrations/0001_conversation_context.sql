-- Short-term memory: ARKOS's table, created exactly as ARKOS does when it is missing.
CREATE TABLE IF NOT EXISTS conversation_context (
    id SERIAL PRIMARY KEY,
    user_id VARCHAR(255) NOT NULL,
    session_id VARCHAR(255) NOT NULL,
    role VARCHAR(50) NOT NULL,
    message TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS idx_user_id ON conversation_context(user_id);
CREATE INDEX IF NOT EXISTS idx_session_id ON conversation_context(session_id);

-- Compatible extensions only: nullable columns ARKOS's INSERTs never name.
ALTER TABLE conversation_context ADD COLUMN IF NOT EXISTS agent_id VARCHAR(255);
ALTER TABLE conversation_context ADD COLUMN IF NOT EXISTS metadata JSONB;

-- ARKOS's real query is "this user's session, newest first"; it had no index for it.
CREATE INDEX IF NOT EXISTS conversation_context_user_session_id
    ON conversation_context (user_id, session_id, id);
