#!/usr/bin/env bash
# Make sure a Java 17+ runtime is on PATH (DynamoDB Local is a Java program).
# As root on Debian/Ubuntu, install openjdk-17-jre-headless when missing; otherwise explain.
set -euo pipefail
major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\)[."].*/\1/p' | head -n1; }
if command -v java >/dev/null 2>&1 && [ "$(major)" -ge 17 ] 2>/dev/null; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing a Java 17 runtime (openjdk-17-jre-headless) for DynamoDB Local..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  exit 0
fi
echo "DynamoDB Local needs a Java 17+ runtime and none was found." >&2
echo "Install one (Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless; macOS: brew install openjdk@17)." >&2
exit 1
