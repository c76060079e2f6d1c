FROM python:3.11-slim-bookworm

# The full Noto Sans CJK for report figures (the project ships a subset that covers common
# Chinese and Japanese; the full font adds rare characters).
RUN apt-get update \
    && apt-get install -y --no-install-recommends fonts-noto-cjk postgresql-client \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# The dependencies first, in a layer that changes only with the lock: the CPU build of torch
# (the pin; the GPU worker image can swap in a CUDA wheel), then every other package at the
# version and hash requirements.lock records.
COPY requirements.lock ./
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
    && pip install --no-cache-dir --require-hashes -r requirements.lock

# The whole project less what .dockerignore leaves out: every app in INSTALLED_APPS, the
# templates, static files and translations (tests/core/test_packaging.py keeps it so).
COPY . .
RUN pip install --no-cache-dir --no-deps -e .

ENV PYTHONUNBUFFERED=1 PLATFORM_VAR_DIR=/data
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput

EXPOSE 8000
CMD ["python", "-m", "config.serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
