-- The current memhub schema: what store/postgres/migrate.py and every file of
-- store/postgres/migrations/ produce, applied in order to an empty database, plus the
-- embedding column and its HNSW index that store/postgres/space.py's ensure_embedding_space
-- adds at run time, shown here for all-MiniLM-L6-v2 (384 dimensions; the default
-- embedder, all-mpnet-base-v2 int8, makes it vector(768), and any other embedder vector(N)).
--
-- GENERATED from the catalog by tools/schema.py: do not edit. Read it, don't run it: the
-- migrations are what builds a database. After adding a migration, run
--     .venv/bin/python tools/schema.py --write
-- (tests/store/test_schema_file.py checks this file against a freshly migrated database).

CREATE EXTENSION btree_gin;
CREATE EXTENSION vector;

CREATE TABLE api_keys (
    id bigint NOT NULL DEFAULT nextval('api_keys_id_seq'::regclass),
    name text NOT NULL,
    key_hash text NOT NULL,
    prefix text NOT NULL,
    tenant text,
    is_admin boolean NOT NULL DEFAULT false,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    revoked_at timestamp with time zone,
    last_used_at timestamp with time zone,
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash),
    CONSTRAINT api_keys_one_role CHECK ((is_admin = (tenant IS NULL))),
    CONSTRAINT api_keys_pkey PRIMARY KEY (id),
    CONSTRAINT api_keys_tenant_name CHECK ((tenant ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text))
);
CREATE UNIQUE INDEX api_keys_key_hash_key ON public.api_keys USING btree (key_hash);
CREATE UNIQUE INDEX api_keys_pkey ON public.api_keys USING btree (id);
CREATE INDEX api_keys_tenant ON public.api_keys USING btree (tenant) WHERE (tenant IS NOT NULL);

CREATE TABLE conversation_context (
    id integer NOT NULL DEFAULT nextval('conversation_context_id_seq'::regclass),
    user_id character varying(255) NOT NULL,
    session_id character varying(255) NOT NULL,
    role character varying(50) NOT NULL,
    message text NOT NULL,
    created_at timestamp without time zone DEFAULT CURRENT_TIMESTAMP,
    agent_id character varying(255),
    metadata jsonb,
    session_first bigint,
    position bigint,
    CONSTRAINT conversation_context_pkey PRIMARY KEY (id)
);
CREATE UNIQUE INDEX conversation_context_pkey ON public.conversation_context USING btree (id);
CREATE INDEX conversation_context_user_c ON public.conversation_context USING btree (user_id COLLATE "C");
CREATE INDEX conversation_context_user_session_id ON public.conversation_context USING btree (user_id, session_id, id);
CREATE TRIGGER turn_position BEFORE INSERT ON public.conversation_context FOR EACH ROW EXECUTE FUNCTION memhub_turn_position();

CREATE TABLE idempotency_keys (
    owner text NOT NULL,
    key text NOT NULL,
    fingerprint text NOT NULL,
    turn_ids bigint[] NOT NULL DEFAULT '{}'::bigint[],
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (owner, key)
);
CREATE INDEX idempotency_keys_created_at ON public.idempotency_keys USING btree (created_at);
CREATE UNIQUE INDEX idempotency_keys_pkey ON public.idempotency_keys USING btree (owner, key);

CREATE TABLE import_cursors (
    source text NOT NULL,
    path text NOT NULL,
    position bigint NOT NULL,
    digest text NOT NULL,
    finished boolean NOT NULL DEFAULT false,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT import_cursors_pkey PRIMARY KEY (source)
);
CREATE UNIQUE INDEX import_cursors_pkey ON public.import_cursors USING btree (source);

CREATE TABLE memhub_schema_migrations (
    version text NOT NULL,
    applied_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT memhub_schema_migrations_pkey PRIMARY KEY (version)
);
CREATE UNIQUE INDEX memhub_schema_migrations_pkey ON public.memhub_schema_migrations USING btree (version);

CREATE TABLE memhub_settings (
    key text NOT NULL,
    value text NOT NULL,
    CONSTRAINT memhub_settings_pkey PRIMARY KEY (key)
);
CREATE UNIQUE INDEX memhub_settings_pkey ON public.memhub_settings USING btree (key);

CREATE TABLE memories (
    id uuid NOT NULL,
    user_id character varying(255),
    agent_id character varying(255),
    run_id character varying(255),
    memory text NOT NULL,
    hash text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    memory_type text,
    valid_from timestamp with time zone NOT NULL DEFAULT now(),
    valid_to timestamp with time zone,
    superseded_by uuid,
    source_turn_ids bigint[] NOT NULL DEFAULT '{}'::bigint[],
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, memory)) STORED,
    role text,
    previous_turn_id bigint,
    retired_at timestamp with time zone,
    expires_at timestamp with time zone,
    embedding vector(384),
    CONSTRAINT memories_pkey PRIMARY KEY (id),
    CONSTRAINT memories_scoped CHECK ((COALESCE(user_id, agent_id, run_id) IS NOT NULL))
);
CREATE INDEX memories_agent ON public.memories USING btree (agent_id) WHERE (agent_id IS NOT NULL);
CREATE UNIQUE INDEX memories_current_fact_hash ON public.memories USING btree (COALESCE(user_id, ''::character varying), COALESCE(agent_id, ''::character varying), COALESCE(run_id, ''::character varying), hash) WHERE ((valid_to IS NULL) AND (role IS NULL));
CREATE INDEX memories_current_scope ON public.memories USING btree (user_id, agent_id, run_id) WHERE (valid_to IS NULL);
CREATE INDEX memories_current_user_c ON public.memories USING btree (user_id COLLATE "C") WHERE ((valid_to IS NULL) AND (user_id IS NOT NULL));
CREATE INDEX memories_embedding_hnsw ON public.memories USING hnsw (embedding vector_cosine_ops);
CREATE INDEX memories_expires_at ON public.memories USING btree (expires_at) WHERE (expires_at IS NOT NULL);
CREATE INDEX memories_metadata ON public.memories USING gin (metadata jsonb_path_ops) WITH (fastupdate=off);
CREATE UNIQUE INDEX memories_pkey ON public.memories USING btree (id);
CREATE INDEX memories_retired ON public.memories USING btree (retired_at) WHERE (retired_at IS NOT NULL);
CREATE INDEX memories_run ON public.memories USING btree (run_id) WHERE (run_id IS NOT NULL);
CREATE INDEX memories_source_turn_ids ON public.memories USING gin (source_turn_ids) WITH (fastupdate=off);
CREATE INDEX memories_superseded_by ON public.memories USING btree (superseded_by) WHERE (superseded_by IS NOT NULL);
CREATE INDEX memories_user ON public.memories USING btree (user_id, created_at) WHERE (user_id IS NOT NULL);
CREATE TRIGGER memory_passages_removed AFTER DELETE ON public.memories REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_passages_removed();
CREATE TRIGGER memory_passages_stale AFTER UPDATE OF hash ON public.memories FOR EACH ROW WHEN ((old.hash IS DISTINCT FROM new.hash)) EXECUTE FUNCTION memhub_memory_passages_stale();
CREATE TRIGGER memory_passages_truncated AFTER TRUNCATE ON public.memories FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_passages_truncated();
CREATE TRIGGER memory_words_added AFTER INSERT ON public.memories REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_words_added();
CREATE TRIGGER memory_words_changed AFTER UPDATE OF user_id, agent_id, run_id, memory, hash, valid_to, role, expires_at, source_turn_ids ON public.memories FOR EACH ROW WHEN (((((((((((old.user_id)::text IS DISTINCT FROM (new.user_id)::text) OR ((old.agent_id)::text IS DISTINCT FROM (new.agent_id)::text)) OR ((old.run_id)::text IS DISTINCT FROM (new.run_id)::text)) OR (old.memory IS DISTINCT FROM new.memory)) OR (old.hash IS DISTINCT FROM new.hash)) OR (old.valid_to IS DISTINCT FROM new.valid_to)) OR (old.role IS DISTINCT FROM new.role)) OR (old.expires_at IS DISTINCT FROM new.expires_at)) OR (old.source_turn_ids IS DISTINCT FROM new.source_turn_ids))) EXECUTE FUNCTION memhub_memory_words_changed();
CREATE TRIGGER memory_words_removed AFTER DELETE ON public.memories REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_words_removed();
CREATE TRIGGER memory_words_truncated AFTER TRUNCATE ON public.memories FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_words_truncated();

CREATE TABLE memory_history (
    id bigint NOT NULL DEFAULT nextval('memory_history_id_seq'::regclass),
    memory_id uuid NOT NULL,
    user_id character varying(255),
    agent_id character varying(255),
    run_id character varying(255),
    event text NOT NULL,
    old_memory text,
    new_memory text,
    actor text,
    turn_ids bigint[] NOT NULL DEFAULT '{}'::bigint[],
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT memory_history_event_check CHECK ((event = ANY (ARRAY['ADD'::text, 'UPDATE'::text, 'SUPERSEDE'::text, 'DELETE'::text, 'RETIRE'::text, 'RESTORE'::text, 'PURGE'::text]))),
    CONSTRAINT memory_history_pkey PRIMARY KEY (id)
);
CREATE INDEX memory_history_memory ON public.memory_history USING btree (memory_id, id);
CREATE UNIQUE INDEX memory_history_pkey ON public.memory_history USING btree (id);
CREATE INDEX memory_history_user ON public.memory_history USING btree (user_id) WHERE (user_id IS NOT NULL);

CREATE TABLE memory_jobs (
    id bigint NOT NULL DEFAULT nextval('memory_jobs_id_seq'::regclass),
    kind text NOT NULL,
    user_id character varying(255),
    agent_id character varying(255),
    run_id character varying(255),
    payload jsonb NOT NULL,
    status text NOT NULL DEFAULT 'queued'::text,
    attempts integer NOT NULL DEFAULT 0,
    run_after timestamp with time zone NOT NULL DEFAULT now(),
    last_error text,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    lease_owner text,
    lease_until timestamp with time zone,
    CONSTRAINT memory_jobs_pkey PRIMARY KEY (id),
    CONSTRAINT memory_jobs_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'parked'::text])))
);
CREATE INDEX memory_jobs_leased ON public.memory_jobs USING btree (lease_until) WHERE (lease_owner IS NOT NULL);
CREATE INDEX memory_jobs_owner ON public.memory_jobs USING btree (COALESCE(user_id, agent_id, run_id, ''::character varying), id) WHERE (status = 'queued'::text);
CREATE UNIQUE INDEX memory_jobs_pkey ON public.memory_jobs USING btree (id);
CREATE INDEX memory_jobs_ready ON public.memory_jobs USING btree (id) WHERE (status = 'queued'::text);
CREATE INDEX memory_jobs_user ON public.memory_jobs USING btree (user_id) WHERE (user_id IS NOT NULL);

CREATE TABLE memory_llm_usage (
    id bigint NOT NULL DEFAULT nextval('memory_llm_usage_id_seq'::regclass),
    user_id character varying(255),
    agent_id character varying(255),
    run_id character varying(255),
    model text NOT NULL,
    calls integer NOT NULL,
    prompt_tokens integer NOT NULL,
    completion_tokens integer NOT NULL,
    turns integer NOT NULL,
    jobs integer NOT NULL,
    operations jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT memory_llm_usage_pkey PRIMARY KEY (id)
);
CREATE INDEX memory_llm_usage_at ON public.memory_llm_usage USING btree (created_at);
CREATE UNIQUE INDEX memory_llm_usage_pkey ON public.memory_llm_usage USING btree (id);
CREATE INDEX memory_llm_usage_user ON public.memory_llm_usage USING btree (user_id) WHERE (user_id IS NOT NULL);

CREATE TABLE memory_passages (
    memory_id uuid NOT NULL,
    ordinal integer NOT NULL,
    start_char integer NOT NULL,
    end_char integer NOT NULL,
    embedding vector(384),
    CONSTRAINT memory_passages_check CHECK ((end_char > start_char)),
    CONSTRAINT memory_passages_ordinal_check CHECK ((ordinal >= 0)),
    CONSTRAINT memory_passages_pkey PRIMARY KEY (memory_id, ordinal),
    CONSTRAINT memory_passages_start_char_check CHECK ((start_char >= 0))
);
CREATE INDEX memory_passages_embedding_hnsw ON public.memory_passages USING hnsw (embedding vector_cosine_ops);
CREATE UNIQUE INDEX memory_passages_pkey ON public.memory_passages USING btree (memory_id, ordinal);

CREATE TABLE memory_words (
    id uuid NOT NULL,
    user_id character varying(255),
    agent_id character varying(255),
    run_id character varying(255),
    valid_to timestamp with time zone,
    hash text NOT NULL,
    tsv tsvector NOT NULL,
    role text,
    expires_at timestamp with time zone,
    first_turn_session bigint,
    first_turn_position bigint,
    CONSTRAINT memory_words_pkey PRIMARY KEY (id)
);
CREATE UNIQUE INDEX memory_words_pkey ON public.memory_words USING btree (id);
CREATE INDEX memory_words_scope_tsv ON public.memory_words USING gin (user_id, agent_id, run_id, tsv) WITH (fastupdate=off);
CREATE INDEX memory_words_tsv ON public.memory_words USING gin (tsv) WITH (fastupdate=off);
CREATE INDEX memory_words_turn_position ON public.memory_words USING btree (first_turn_session, first_turn_position);

CREATE OR REPLACE FUNCTION public.memhub_memory_passages_removed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    DELETE FROM memory_passages p USING removed r WHERE p.memory_id = r.id;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.memhub_memory_passages_stale()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    DELETE FROM memory_passages WHERE memory_id = NEW.id;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.memhub_memory_passages_truncated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    TRUNCATE memory_passages;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.memhub_memory_words_added()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO memory_words (id, user_id, agent_id, run_id, valid_to, hash, tsv, role,
                              expires_at, first_turn_session, first_turn_position)
    SELECT a.id, a.user_id, a.agent_id, a.run_id, a.valid_to, a.hash, a.tsv, a.role,
           a.expires_at, c.session_first, c.position
    FROM added a LEFT JOIN conversation_context c ON c.id = a.source_turn_ids[1];
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.memhub_memory_words_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    UPDATE memory_words
    SET user_id = NEW.user_id, agent_id = NEW.agent_id, run_id = NEW.run_id,
        valid_to = NEW.valid_to, hash = NEW.hash, tsv = NEW.tsv, role = NEW.role,
        expires_at = NEW.expires_at,
        first_turn_session = (SELECT c.session_first FROM conversation_context c
                              WHERE c.id = NEW.source_turn_ids[1]),
        first_turn_position = (SELECT c.position FROM conversation_context c
                               WHERE c.id = NEW.source_turn_ids[1])
    WHERE id = NEW.id;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.memhub_memory_words_removed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    DELETE FROM memory_words w USING removed r WHERE w.id = r.id;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.memhub_memory_words_truncated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    TRUNCATE memory_words;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.memhub_turn_position()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    last_turn RECORD;
BEGIN
    SELECT c.session_first, c.position INTO last_turn FROM conversation_context c
    WHERE c.user_id = NEW.user_id AND c.session_id = NEW.session_id
    ORDER BY c.id DESC LIMIT 1;
    NEW.session_first := coalesce(last_turn.session_first, NEW.id);
    NEW.position := coalesce(last_turn.position, 0) + 1;
    RETURN NEW;
END
$function$;

CREATE AGGREGATE memhub_tsvector_union(tsvector) (SFUNC = tsvector_concat, STYPE = tsvector, INITCOND = '');
