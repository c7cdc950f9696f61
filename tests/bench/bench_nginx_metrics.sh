#!/bin/sh
# bench_nginx_metrics.sh -- nginx-metrics-cost: what sovereign_key_metrics
# costs nginx's handshakes (see bench_nginx.sh, NGINX_BENCH=metrics).
NGINX_BENCH=metrics exec "$(dirname "$0")/bench_nginx.sh" "$@"
