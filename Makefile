# sovereign-keys: one GNU Makefile for everything.
#   make            build libsk, sk (and, later, the module, milter, daemons)
#   make test       unit tests, short fuzz runs, integration tests (t/)
#   make SAN=1 test the same under AddressSanitizer + UBSan
#   make fuzz       each fuzz target for FUZZ_TIME seconds
#   make bench      every benchmark (B=name for one)
#   make bench-scale  growth to millions of entries (docs/benchmarks.md)

CC      ?= cc
NPROC   := $(shell nproc 2>/dev/null || echo 2)
SAN     ?=
ifeq ($(SAN),1)
BUILD   ?= build-san
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all \
           -fno-omit-frame-pointer
else
BUILD   ?= build
SANFLAGS =
endif

WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wpointer-arith -Wformat=2
CFLAGS  ?= -O2 -g
# -fPIC: libsk.a is linked into the nginx module, a shared object.
ALL_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64 $(WARN) \
             $(CFLAGS) -fPIC $(SANFLAGS) -Icommon/include
LDFLAGS ?=
LIBS     = -lhiredis -llmdb -lldns -lexpat -lsodium -lssl -lcrypto

# libsk: the core in common/src/, the client side in common/src/client/.
LIB_SRCS  = $(sort $(wildcard common/src/*.c common/src/client/*.c))
LIB_HDRS  = $(wildcard common/include/sk/*.h common/src/*.h common/src/client/*.h)
LIB_OBJS  = $(LIB_SRCS:%.c=$(BUILD)/%.o)
CLI_SRCS  = $(sort $(wildcard common/cli/*.c))
CLI_OBJS  = $(CLI_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS = $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_SRCS = $(sort $(wildcard tests/bench/bench_*.c))
BENCH_BINS = $(BENCH_SRCS:tests/bench/%.c=$(BUILD)/bench/%)
FUZZ_SRCS = $(sort $(wildcard tests/fuzz/fuzz_*.c))

LIBSK = $(BUILD)/libsk.a
SK    = $(BUILD)/sk

.PHONY: all test unit fuzz fuzz-build bench clean deps demo
# t/client-decisions.t's driver of the C API (sk/tls.h).
TLS_DRIVE = $(BUILD)/tests/tls_drive
# t/timeline-dnssec.t's chains from signed zones (tests/unit/dnssec_fixture.h).
DNSSEC_CHAIN = $(BUILD)/tests/dnssec_chain
# t/mirror-map.t's check of map proofs and evidence with libsk.
MAP_CHECK = $(BUILD)/tests/map_check
# t/timeline-map.t's map of a log, recomputed whole (tests/unit/map_replay.c).
MAP_REPLAY = $(BUILD)/tests/map_replay
all: $(LIBSK) $(SK) $(UNIT_BINS) $(BENCH_BINS) $(TLS_DRIVE) $(DNSSEC_CHAIN) \
    $(MAP_CHECK) $(MAP_REPLAY)

$(BUILD)/%.o: %.c $(LIB_HDRS) $(wildcard common/cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIBSK): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# sk proxy's event loop: libevent, its OpenSSL bufferevents and threads.
$(SK): $(CLI_OBJS) $(LIBSK)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -pthread -o $@ $(CLI_OBJS) $(LIBSK) $(LIBS) \
	    -lcurl -levent_openssl -levent_pthreads -levent_core

$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(LIBSK) $(LIBS) -lcmocka

# bench_carrier.c's dnssec-validate builds its chain as test_dnssec.c does.
$(BUILD)/bench/bench_carrier: ALL_CFLAGS += -Itests/unit
# bench_client.c's client-decide-absent builds answers as the client tests.
$(BUILD)/bench/bench_client: ALL_CFLAGS += -Itests/unit
$(BUILD)/bench/bench_client: LIBS += -lcmocka
$(BUILD)/bench/bench_client: tests/unit/test_client_fixture.h

# test_dnssec.c checks each verdict against a second validator, getdns.
$(BUILD)/tests/test_dnssec: LIBS += -lgetdns

$(TLS_DRIVE): tests/unit/tls_drive.c $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSK) $(LIBS) -lcurl

$(MAP_CHECK): tests/unit/map_check.c $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSK) $(LIBS)

$(DNSSEC_CHAIN): tests/unit/dnssec_chain.c tests/unit/dnssec_fixture.h $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSK) $(LIBS)

$(MAP_REPLAY): tests/unit/map_replay.c $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSK) $(LIBS)

$(BUILD)/bench/%: tests/bench/%.c $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSK) $(LIBS)

# Fuzz targets need clang's libFuzzer; they get their own ASan build of libsk.
FUZZ_CC    ?= clang
FUZZ_BUILD  = build-fuzz
FUZZ_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64 -g -O1 -Icommon/include \
              -fsanitize=fuzzer-no-link,address,undefined
FUZZ_OBJS   = $(LIB_SRCS:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_BINS   = $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_TIME  ?= 60

$(FUZZ_BUILD)/%.o: %.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJS) $(LIBS)

# What the targets share (header-only, see tests/fuzz/fuzz.h).
$(FUZZ_BINS): tests/fuzz/fuzz.h

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	FUZZ_TIME=$(FUZZ_TIME) tests/fuzz/run.sh $(FUZZ_BUILD)

unit: $(UNIT_BINS)
	tests/run-unit.sh $(BUILD)

# The README's commands: each installs what it needs first.
test: deps
	$(MAKE) -j$(NPROC) all fuzz-build
	BUILD=$(BUILD) SAN=$(SAN) tests/run-all.sh

bench: $(BENCH_BINS) $(SK)
	BUILD=$(BUILD) tests/bench/run.sh $(B)

deps:
	scripts/install-deps.sh

demo: deps
	$(MAKE) all
	BUILD=$(BUILD) scripts/walkthrough.sh

clean:
	rm -rf build build-san build-fuzz

# nginx dynamic module (ngx_sk_module/): built against Debian's nginx-dev,
# and part of `all` only where it is installed.
NGX_SRC ?= /usr/share/nginx/src
NGX_MOD  = $(BUILD)/ngx/ngx_http_sk_module.so
NGX_ALL  = $(if $(wildcard $(NGX_SRC)/conf_flags),ngx)

.PHONY: ngx
all: $(NGX_ALL)
ngx: $(NGX_MOD)

$(NGX_MOD): $(LIBSK) $(wildcard ngx_sk_module/*) scripts/build-ngx-module.sh
	+SAN=$(SAN) NGX_SRC=$(NGX_SRC) scripts/build-ngx-module.sh $(BUILD) $(LIBSK)

# sk-timeline (timeline/): the append-only timeline server.
TL_SRCS = $(sort $(wildcard timeline/tl_*.c))
TL_OBJS = $(TL_SRCS:%.c=$(BUILD)/%.o)
TL_BIN  = $(BUILD)/sk-timeline

.PHONY: timeline
all: $(TL_BIN)
timeline: $(TL_BIN)

$(BUILD)/timeline/%.o: timeline/%.c timeline/tl.h $(wildcard common/include/sk/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -pthread -c -o $@ $<

$(TL_BIN): $(TL_OBJS) $(LIBSK)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -pthread -o $@ $(TL_OBJS) $(LIBSK) \
	    -lmicrohttpd -lbz2 -lcurl $(LIBS)

# Its load client for tests/bench/bench_timeline.sh.
TL_BENCH = $(BUILD)/bench/tl_client
all: $(TL_BENCH)
bench: $(TL_BIN) $(TL_BENCH)

# Its DNSSEC Binds' chains come from signed zones as test_dnssec.c's do.
$(TL_BENCH): ALL_CFLAGS += -Itests/unit
$(TL_BENCH): tests/bench/tl_client.c tests/unit/dnssec_fixture.h $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -pthread -o $@ $< $(LIBSK) $(LIBS)

# Fuzz targets of sk-timeline's parsers (tests/fuzz/fuzz_tl_*.c): libsk's
# fuzz objects plus the timeline's own, all but its main(), and libsk's
# httpd.o (tl_http.o calls it; these targets link libmicrohttpd).
TL_LIBS      = -lmicrohttpd -lbz2 -lcurl $(LIBS)
FUZZ_TL_OBJS = $(filter-out $(FUZZ_BUILD)/timeline/tl_main.o, \
                   $(TL_SRCS:%.c=$(FUZZ_BUILD)/%.o)) \
               $(FUZZ_BUILD)/common/src/httpd.o

$(FUZZ_TL_OBJS): $(FUZZ_BUILD)/%.o: %.c timeline/tl.h $(wildcard common/include/sk/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -pthread -c -o $@ $<

$(FUZZ_BUILD)/fuzz_tl_%: tests/fuzz/fuzz_tl_%.c $(FUZZ_TL_OBJS) $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Itimeline -fsanitize=fuzzer -pthread -o $@ $< \
	    $(FUZZ_TL_OBJS) $(FUZZ_OBJS) $(TL_LIBS)

# The mirror's prefix-head parser: mr_prefix.o needs only libsk.
$(FUZZ_BUILD)/mirror/mr_prefix.o: mirror/mr_prefix.c mirror/mr.h $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Imirror -c -o $@ $<

$(FUZZ_BUILD)/fuzz_mirror_prefix: tests/fuzz/fuzz_mirror_prefix.c \
    $(FUZZ_BUILD)/mirror/mr_prefix.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Imirror -fsanitize=fuzzer -o $@ $< \
	    $(FUZZ_BUILD)/mirror/mr_prefix.o $(FUZZ_OBJS) $(LIBS)

# Handshake load clients for tests/bench/bench_nginx.sh (OpenSSL, GnuTLS).
NGX_BENCH = $(BUILD)/bench/nginx_client $(BUILD)/bench/nginx_client_gnutls
ngx: $(NGX_BENCH)

$(BUILD)/bench/nginx_client: tests/bench/nginx_client.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< -lssl -lcrypto -lpthread

$(BUILD)/bench/nginx_client_gnutls: tests/bench/nginx_client.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DSK_GNUTLS $(LDFLAGS) -o $@ $< -lgnutls -lpthread

# sk-milter (sk_milter/): the libmilter daemon for Postfix and Sendmail.
SKM_SRCS = $(sort $(wildcard sk_milter/*.c))
SKM_OBJS = $(SKM_SRCS:%.c=$(BUILD)/%.o)
SKM_BIN  = $(BUILD)/sk-milter

.PHONY: milter
all: $(SKM_BIN)
milter: $(SKM_BIN)

$(BUILD)/sk_milter/%.o: sk_milter/%.c sk_milter/skm.h $(wildcard common/include/sk/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -pthread -c -o $@ $<

# libldns and libexpat: the client checks a DNSSEC Bind reported unbacked
# against the trust file's dnssec_anchors (client_reneged.c).
$(SKM_BIN): $(SKM_OBJS) $(LIBSK)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -pthread -o $@ $(SKM_OBJS) $(LIBSK) \
	    -lmicrohttpd -lcurl -lhiredis -llmdb -lldns -lexpat -lsodium -lssl \
	    -lcrypto -lresolv -lpthread

# Unit tests of the milter's I/O-free parts (tests/unit/test_milter_*.c)
# link the milter objects they test.
SKM_UNIT_OBJS = $(BUILD)/sk_milter/skm_ar.o

$(BUILD)/tests/test_milter_%: tests/unit/test_milter_%.c $(SKM_UNIT_OBJS) $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(SKM_UNIT_OBJS) \
	    $(LIBSK) $(LIBS) -lcmocka

# sk-mirror (mirror/): replicates timelines, answers name queries.
MR_SRCS = $(sort $(wildcard mirror/mr_*.c))
MR_OBJS = $(MR_SRCS:%.c=$(BUILD)/%.o)
MR_BIN  = $(BUILD)/sk-mirror

.PHONY: mirror
all: $(MR_BIN)
mirror: $(MR_BIN)

$(BUILD)/mirror/mr_%.o: mirror/mr_%.c mirror/mr.h $(wildcard common/include/sk/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -pthread -c -o $@ $<

# common/src/httpd.c needs libmicrohttpd and client/client_curl.c libcurl,
# which the fuzz targets (linking every libsk object) do not link.
FUZZ_OBJS := $(filter-out $(FUZZ_BUILD)/common/src/httpd.o \
                 $(FUZZ_BUILD)/common/src/client/client_curl.o,$(FUZZ_OBJS))

# Fuzz targets of the mirror's parsers of what peers, timelines and Redis
# send (listed here): every mirror object but main's, libsk's fuzz objects
# and httpd.o (mr_http.o calls it), as the timeline's targets are linked.
FUZZ_MR_BINS = $(FUZZ_BUILD)/fuzz_mirror_listing \
               $(FUZZ_BUILD)/fuzz_mirror_reneged \
               $(FUZZ_BUILD)/fuzz_mirror_cache
FUZZ_MR_OBJS = $(filter-out $(FUZZ_BUILD)/mirror/mr_main.o \
                   $(FUZZ_BUILD)/mirror/mr_prefix.o, \
                   $(MR_SRCS:%.c=$(FUZZ_BUILD)/%.o))

$(FUZZ_MR_OBJS): $(FUZZ_BUILD)/%.o: %.c mirror/mr.h $(wildcard common/include/sk/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -pthread -c -o $@ $<

$(FUZZ_MR_BINS): $(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_MR_OBJS) \
    $(FUZZ_BUILD)/mirror/mr_prefix.o $(FUZZ_BUILD)/common/src/httpd.o \
    $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Imirror -fsanitize=fuzzer -pthread -o $@ $< \
	    $(FUZZ_MR_OBJS) $(FUZZ_BUILD)/mirror/mr_prefix.o \
	    $(FUZZ_BUILD)/common/src/httpd.o $(FUZZ_OBJS) -lmicrohttpd -lbz2 \
	    -lcurl $(LIBS)

$(MR_BIN): $(MR_OBJS) $(LIBSK)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -pthread -o $@ $(MR_OBJS) $(LIBSK) \
	    -lmicrohttpd -lbz2 -lcurl $(LIBS)

# Unit tests of the mirror's parsers (tests/unit/test_mirror_*.c) link
# every mirror object but main's.
MR_UNIT_OBJS = $(filter-out $(BUILD)/mirror/mr_main.o,$(MR_OBJS))

$(BUILD)/tests/test_mirror_%: tests/unit/test_mirror_%.c $(MR_UNIT_OBJS) $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -Imirror $(LDFLAGS) -pthread -o $@ $< \
	    $(MR_UNIT_OBJS) $(LIBSK) -lmicrohttpd -lbz2 -lcurl $(LIBS) -lcmocka

# Load client and log generator for tests/bench/bench_mirror*.sh.
MR_BENCH = $(BUILD)/bench/mirror_client $(BUILD)/bench/mirror_gen
mirror: $(MR_BENCH)
all: $(MR_BENCH)

$(BUILD)/bench/mirror_client: tests/bench/mirror_client.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< -lpthread

# The floods of issue 40 and their victim (t/fault/flood-*.t,
# tests/bench/bench_flood.pl).
FLOOD = $(BUILD)/bench/flood
all: $(FLOOD)
bench: $(FLOOD)

$(FLOOD): tests/bench/flood.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $<

$(BUILD)/bench/mirror_gen: tests/bench/mirror_gen.c $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -pthread -o $@ $< $(LIBSK) $(LIBS)

# tests/bench/bench_metrics_scrape.pl's 10,000 carriers for nginx.
all: $(BUILD)/bench/carrier_gen
$(BUILD)/bench/carrier_gen: tests/bench/carrier_gen.c $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSK) $(LIBS)

# Growth with the number of entries (issue 15): minutes to hours, so in
# neither `make test` nor `make bench`.  SCALE_SIZES="10000 20000 40000"
# for a quick run; generated logs are kept in SK_BENCH_CACHE.
.PHONY: bench-scale
bench-scale: $(TL_BIN) $(MR_BIN) $(MR_BENCH)
	BUILD=$(BUILD) tests/bench/bench_scale.sh

# The first-contact client of tests/bench/bench_staple.pl and the proxy
# that puts a round trip on its mirror path.
STAPLE_BENCH = $(BUILD)/bench/staple_client $(BUILD)/bench/delay_proxy
all: $(STAPLE_BENCH)
bench: $(STAPLE_BENCH)

$(BUILD)/bench/staple_client: tests/bench/staple_client.c $(LIBSK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSK) $(LIBS) -lcurl

$(BUILD)/bench/delay_proxy: tests/bench/delay_proxy.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $<

# The socketmap parser's fuzz target links the milter's I/O-free parser.
$(FUZZ_BUILD)/fuzz_socketmap: tests/fuzz/fuzz_socketmap.c $(FUZZ_BUILD)/sk_milter/skm_netstring.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/sk_milter/skm_netstring.o $(FUZZ_OBJS) $(LIBS)
$(FUZZ_BUILD)/sk_milter/skm_netstring.o: sk_milter/skm.h

# The Authentication-Results parser's target links the milter's skm_ar.o.
$(FUZZ_BUILD)/fuzz_milter_ar: tests/fuzz/fuzz_milter_ar.c $(FUZZ_BUILD)/sk_milter/skm_ar.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/sk_milter/skm_ar.o $(FUZZ_OBJS) $(LIBS)
$(FUZZ_BUILD)/sk_milter/skm_ar.o: sk_milter/skm.h

# The milter session's target drives the per-message logic: every milter
# object but main's.
FUZZ_SKM_OBJS = $(filter-out $(FUZZ_BUILD)/sk_milter/skm_main.o, \
                    $(SKM_SRCS:%.c=$(FUZZ_BUILD)/%.o))
$(FUZZ_BUILD)/fuzz_milter_session: tests/fuzz/fuzz_milter_session.c $(FUZZ_SKM_OBJS) $(FUZZ_OBJS) $(FUZZ_BUILD)/common/src/client/client_curl.o $(FUZZ_BUILD)/common/src/httpd.o
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -pthread -o $@ $< \
	    $(FUZZ_SKM_OBJS) $(FUZZ_OBJS) \
	    $(FUZZ_BUILD)/common/src/client/client_curl.o \
	    $(FUZZ_BUILD)/common/src/httpd.o $(LIBS) -lmicrohttpd -lcurl -lresolv
$(FUZZ_SKM_OBJS): sk_milter/skm.h

# ---- Installation and Debian packages (docs/operations.md) ----
# make install [DESTDIR=...] [PREFIX=/usr/local] lays out what the .debs
# hold: sk, sk-renew-hook, the daemons, man pages, systemd units, the nginx
# module and its load file (Debian's directories), example configurations
# (never over existing ones).  make uninstall removes all but the
# configurations and state, as apt-get remove does.  The configuration
# goes to PREFIX/etc, but for PREFIX=/usr (a system install, as the .debs
# are): /etc, where operators and the daemons' defaults look; the units
# and sk-renew-hook are written to read it where it went.
PREFIX         ?= /usr/local
BINDIR         ?= $(PREFIX)/bin
SBINDIR        ?= $(PREFIX)/sbin
MANDIR         ?= $(PREFIX)/share/man
SYSCONFDIR     ?= $(if $(filter /usr /usr/,$(PREFIX)),/etc,$(PREFIX)/etc)
LOCALSTATEDIR  ?= /var
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSTEMDUSERUNITDIR ?= $(PREFIX)/lib/systemd/user
NGX_MODULES_DIR ?= /usr/lib/nginx/modules
NGX_LOADCONF_DIR ?= /usr/share/nginx/modules-available
INSTALL        ?= install

INSTALL_BINS  = $(SK) $(TL_BIN) $(MR_BIN) $(SKM_BIN) $(if $(NGX_ALL),$(NGX_MOD))
INSTALL_UNITS = $(patsubst dist/systemd/%.in,%,$(wildcard dist/systemd/*.in)) \
                $(notdir $(filter-out %.in,$(wildcard dist/systemd/*)))
INSTALL_MAN   = $(wildcard docs/*.[158])
INSTALL_CONFS = sk-milter.conf sk-timeline.conf sk-mirror.conf sk/renew.conf
INSTALL_SUBST = sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SBINDIR@|$(SBINDIR)|g' \
                    -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

.PHONY: bins install uninstall deb test-packages
bins: $(INSTALL_BINS)

install: bins
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSCONFDIR)/sk \
	    $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSTEMDUSERUNITDIR) \
	    $(DESTDIR)$(LOCALSTATEDIR)/lib/sk
	$(INSTALL) -m 0755 $(SK) $(DESTDIR)$(BINDIR)/sk
	$(INSTALL) -m 0755 $(TL_BIN) $(MR_BIN) $(SKM_BIN) $(DESTDIR)$(SBINDIR)/
	$(INSTALL_SUBST) dist/sk-renew-hook.in >$(DESTDIR)$(SBINDIR)/sk-renew-hook
	chmod 0755 $(DESTDIR)$(SBINDIR)/sk-renew-hook
	for m in $(INSTALL_MAN); do \
	    $(INSTALL) -m 0644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/ || exit 1; \
	done
	for u in $(INSTALL_UNITS); do \
	    if [ -f dist/systemd/$$u.in ]; then \
	        $(INSTALL_SUBST) dist/systemd/$$u.in >$(DESTDIR)$(SYSTEMDUNITDIR)/$$u; \
	    else \
	        cp dist/systemd/$$u $(DESTDIR)$(SYSTEMDUNITDIR)/$$u; \
	    fi && chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/$$u || exit 1; \
	done
	$(INSTALL_SUBST) dist/systemd-user/sk-proxy.service.in \
	    >$(DESTDIR)$(SYSTEMDUSERUNITDIR)/sk-proxy.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUSERUNITDIR)/sk-proxy.service
	for c in $(INSTALL_CONFS); do \
	    [ -e $(DESTDIR)$(SYSCONFDIR)/$$c ] \
	        || $(INSTALL) -m 0644 dist/etc/$$c $(DESTDIR)$(SYSCONFDIR)/$$c || exit 1; \
	done
ifneq ($(NGX_ALL),)
	$(INSTALL) -d $(DESTDIR)$(NGX_MODULES_DIR) $(DESTDIR)$(NGX_LOADCONF_DIR)
	$(INSTALL) -m 0644 $(NGX_MOD) $(DESTDIR)$(NGX_MODULES_DIR)/
	$(INSTALL) -m 0644 dist/nginx/mod-http-sovereign-key.conf \
	    $(DESTDIR)$(NGX_LOADCONF_DIR)/
endif

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sk $(DESTDIR)$(SBINDIR)/sk-renew-hook \
	    $(addprefix $(DESTDIR)$(SBINDIR)/,$(notdir $(TL_BIN) $(MR_BIN) $(SKM_BIN))) \
	    $(addprefix $(DESTDIR)$(SYSTEMDUNITDIR)/,$(INSTALL_UNITS)) \
	    $(DESTDIR)$(SYSTEMDUSERUNITDIR)/sk-proxy.service \
	    $(DESTDIR)$(NGX_MODULES_DIR)/$(notdir $(NGX_MOD)) \
	    $(DESTDIR)$(NGX_LOADCONF_DIR)/mod-http-sovereign-key.conf
	for m in $(notdir $(INSTALL_MAN)); do \
	    rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$$m; \
	done

# The .debs (debian/), built from a copy of the tree in DEB_OUT, so that
# dpkg-buildpackage writes nothing beside this checkout.
DEB_OUT ?= build-deb-out

deb:
	scripts/build-debs.sh $(DEB_OUT)

# Build the packages, install them on this machine, check them as an
# operator would, purge them (also when a check fails).  Root only.
test-packages:
	tests/packages/run.sh
