"""What the two HTTP doors, the REST server (``memhub serve``) and the MCP server's HTTP
transport (``memhub mcp --http``), share: who may call and how often (:mod:`.access`), how
a refusal is answered in memhub's JSON (:mod:`.answers`), the per-tenant request slots
(:mod:`.slots`) and the HTTP/1.1 parser that answers malformed requests in JSON (:mod:`.h11`).

Above ``memory`` (the keys are read through its admin API), below ``server`` and ``mcp``,
which import it and never each other.
"""
