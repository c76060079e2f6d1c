FROM python:3.11-slim-bookworm

# The full Noto Sans CJK for report figures (the project ships a subset that covers common
# Chinese and Japanese; the full font adds rare characters).
RUN apt-get update \
    && apt-get install -y --no-install-recommends fonts-noto-cjk postgresql-client \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY config ./config
COPY core ./core
COPY chat ./chat
COPY annotation ./annotation
COPY metrics ./metrics
COPY templates ./templates
COPY static ./static
COPY manage.py Procfile ./

# The CPU build of torch first (the pin); the GPU worker image can swap in a CUDA wheel.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
    && pip install --no-cache-dir -e .

ENV PYTHONUNBUFFERED=1 PLATFORM_VAR_DIR=/data
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput

EXPOSE 8000
CMD ["uvicorn", "config.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
