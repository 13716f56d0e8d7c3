"""Storage: SQL, migrations, the embedded server and vector search; nothing else."""
