# A pgqueue broker image: `docker build -t pgqueue .`
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# In a container the broker is reached from other hosts: listen on every interface.
ENV PGQUEUE_HOST=0.0.0.0
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY pgqueue ./pgqueue
COPY migrations ./migrations
RUN pip install --no-cache-dir . && useradd --system --uid 10001 pgqueue
USER pgqueue

EXPOSE 6789 6790
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:6790/healthz', timeout=2).status == 200 else 1)"
ENTRYPOINT ["pgqueue"]
CMD ["serve"]
