#!/usr/bin/perl
# /metrics of sk-timeline and sk-mirror, scraped by a real Prometheus:
# metrics_listen is off by default and a bad one (or one in use) refuses
# to start naming the key; after real appends (created, bad_request,
# forbidden) and a mirror's sync and queries, each /metrics answer passes
# `promtool check metrics`, and Prometheus' query API gives back the
# counts, sizes, latency histograms, requests by endpoint and code, lag,
# states, sync rounds and cache lookups; the checkpoint age counts the
# timeline's own signatures (a chunk's), not a reader's GET /checkpoint.
# Faults, with the alert rules loaded into that Prometheus: a client
# spending its SK's budget (counted as budget, no alert); a timeline
# stopped (SKTimelineDown, SKMirrorTimelineStuck without a state label,
# SKMirrorCannotAnswer with one timeline left); the mirror stopped
# (SKMirrorDown); each pending, and no other alert.  dist/prometheus/:
# `promtool check rules` and `promtool test rules` (each alert fired from
# synthetic series, and quiet on healthy ones).
# dist/grafana/sk-dashboard.json: a row per part, a panel on each
# alert's metric, and the timeline's and mirror's queries run on that
# Prometheus over names their /metrics answers have (nginx-metrics.t and
# milter-metrics.t check the other two rows).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKTimeline;
use SKMirror;
use SKPrometheus;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no prometheus/promtool (scripts/install-deps.sh)'
    unless have_prometheus() && has_cmd('openssl');

my $d = tmpdir();
my $dist = "$SKTest::ROOT/dist/prometheus";

# The rules first: they need nothing running.
my $r = promtool('check', 'rules', "$dist/sk-alerts.yml");
is($r->{rc}, 0, 'promtool check rules dist/prometheus/sk-alerts.yml')
    or diag($r->{out}, $r->{err});
$r = run_cmd(['sh', '-c', 'cd "$0" && exec promtool test rules '
    . 'sk-alerts.test.yml', $dist]);
is($r->{rc}, 0, 'promtool test rules: every alert fires from its series')
    or diag($r->{out}, $r->{err});
# The Grafana dashboard: one row per part, and a panel on every quantity
# an alert watches.
my $dash = dashboard_exprs();
is_deeply([sort keys %$dash], [qw(nginx sk-milter sk-mirror sk-timeline)],
    'dist/grafana/sk-dashboard.json: one row per part');
my %shown = map { $_ => 1 } map { /\b(sk_\w+)/g } map { @$_ } values %$dash;
my @unshown = grep { !$shown{$_} } map { /\b(sk_\w+)/g }
    grep { /^\s+expr:/ } split /\n/, slurp("$dist/sk-alerts.yml");
is_deeply(\@unshown, [], '... a panel for each alert\'s metric');

# A bad metrics_listen is a configuration error naming the key.
spew("$d/bad-tl.conf", "listen = 127.0.0.1:1\ndata_dir = $d/x\ntid = 7\n"
    . "metrics_listen = localhost:9\n");
$r = run_cmd([$SKTimeline::TL, '-n', '-c', "$d/bad-tl.conf"]);
is($r->{rc}, 78, 'sk-timeline: a bad metrics_listen is refused');
like($r->{err}, qr/bad-tl\.conf: "metrics_listen": .*localhost:9/,
    '... naming the key and the value');
spew("$d/bad-mr.conf", "listen = 127.0.0.1:1\ndata_dir = $d/x\n"
    . "timeline = 7 http://127.0.0.1:1 $d/bad-tl.conf\n"
    . "metrics_listen = 127.0.0.1\n");
$r = run_cmd([$SKMirror::MR, '-n', '-c', "$d/bad-mr.conf"]);
is($r->{rc}, 78, 'sk-mirror: a bad metrics_listen is refused');
like($r->{err}, qr/"metrics_listen": .*want ADDRESS:PORT/,
    '... naming the key');

my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(a b other);
my %crt = map { $_ => issue($d, $ca, $sk{$_}, "$_.example", "$d/$_") }
    qw(a b);
$crt{other} = issue($d, $ca, $sk{other}, 'a.example', "$d/other");

my (%t, %mport);
for my $tid (7, 8) {
    mkdir "$d/tl$tid";
    $mport{$tid} = free_port();
    # Timeline 7 signs on its own only each hour (and for chunks), 8 every
    # second (the default checkpoint_interval).
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 1,
        sk_budget => 1, connections => 500,
        metrics_listen => "127.0.0.1:$mport{$tid}",
        $tid == 7 ? (checkpoint_interval => 3600) : ());
    ok($t{$tid}{up}, "timeline $tid listens") or BAIL_OUT(slurp($t{$tid}{log}));
    like(slurp($t{$tid}{log}), qr{metrics on http://127\.0\.0\.1:$mport{$tid}/metrics},
        "timeline $tid: metrics on its own address");
    is(append($t{$tid}, root_entry(cert => "$ca.crt", key => $op))->{code},
        201, "timeline $tid: root CA");
    is(append($t{$tid}, bind_entry(name => "a.example", key => $sk{a},
        chain => [$crt{a}]))->{code}, 201, "timeline $tid: Bind a.example");
}
is(append($t{7}, "not an entry\n\n")->{code}, 400, 'a malformed entry: 400');
is(append($t{7}, bind_entry(name => 'a.example', key => $sk{other},
    chain => [$crt{other}]))->{code}, 403, 'a second Bind of a name: 403');

# Off by default: a timeline without the key says nothing of metrics.
mkdir "$d/tl9";
my $t9 = start_timeline("$d/tl9", tid => 9);
ok($t9->{up}, 'a timeline without metrics_listen starts');
unlike(slurp($t9->{log}), qr/metrics/, '... and serves no metrics');
stop_daemon($t9->{pid});
# An address in use (timeline 7's metrics): no start, the key named.
mkdir "$d/tl10";
my $t10 = start_timeline("$d/tl10", tid => 10,
    metrics_listen => "127.0.0.1:$mport{7}");
ok(!$t10->{up}, 'metrics_listen on an address in use: no start');
my $in_use = $mport{7};
like(slurp($t10->{log}), qr/"metrics_listen": listen 127\.0\.0\.1:$in_use: cannot start/,
    '... the log names the key and the address');

my $mp = free_port();
my $m = start_mirror("$d/m", [map { [$_, $t{$_}{url},
    "$d/tl$_/timeline.pub"] } 7, 8], metrics_listen => "127.0.0.1:$mp");
ok($m->{up}, 'the mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_state($m, $_, 'Idle', 15), "mirror: timeline $_ Idle") for 7, 8;
is(query($m, 'a.example')->{code}, 200, 'mirror: an answer');
is(query($m, 'a.example')->{code}, 200, 'mirror: the same, from the cache');
is(query($m, 'not_a..name')->{code}, 400, 'mirror: a bad name');

# Each answer: the exposition format, as promtool reads it.
for my $u ("127.0.0.1:$mport{7}", "127.0.0.1:$mport{8}", "127.0.0.1:$mp") {
    my $s = scrape("http://$u/metrics");
    is($s->{code}, 200, "GET http://$u/metrics");
    like($s->{type}, qr{^text/plain; version=0\.0\.4}, '... text format 0.0.4');
    $r = promtool({ stdin => $s->{body} }, 'check', 'metrics');
    is($r->{rc}, 0, '... promtool check metrics: clean')
        or diag($r->{out}, $r->{err}, $s->{body});
}
is(scrape("http://127.0.0.1:$mp/status")->{code}, 404,
    'the metrics address serves only /metrics');

my $p = start_prometheus($d, {
    'sk-timeline' => ["127.0.0.1:$mport{7}", "127.0.0.1:$mport{8}"],
    'sk-mirror' => ["127.0.0.1:$mp"] }, ["$dist/sk-alerts.yml"]);
ok($p->{up}, 'a private Prometheus is ready') or BAIL_OUT(slurp($p->{log}));
my $i7 = "instance=\"127.0.0.1:$mport{7}\"";
ok(prom_wait($p, "count(up == 1)", sub { $_[0] == 3 }, 15),
    'Prometheus scrapes all three') or diag(slurp($p->{log}));

sub val { return prom_value($p, $_[0]) // 'none' }

# Every query of the dashboard's rows for them is one Prometheus takes, on
# metrics the daemons export.
is_deeply([dashboard_check($p, 'sk-timeline',
    scrape("http://127.0.0.1:$mport{7}/metrics")->{body})], [],
    'dashboard: the sk-timeline queries run, on sk-timeline\'s metrics');
is_deeply([dashboard_check($p, 'sk-mirror',
    scrape("http://127.0.0.1:$mp/metrics")->{body})], [],
    'dashboard: the sk-mirror queries run, on sk-mirror\'s metrics');

is(val("sk_timeline_appends_total{$i7,result=\"created\"}"), 2,
    'timeline 7: 2 appends created');
is(val("sk_timeline_appends_total{$i7,result=\"bad_request\"}"), 1,
    '... 1 bad_request');
is(val("sk_timeline_appends_total{$i7,result=\"forbidden\"}"), 1,
    '... 1 forbidden');
is(val("sum(sk_timeline_appends_total{result=\"created\"})"), 4,
    'both timelines: 4 created');
is(val("sk_timeline_append_duration_seconds_count{$i7}"), 4,
    'timeline 7: 4 append latencies observed');
is(val("sk_timeline_append_duration_seconds_bucket{$i7,le=\"+Inf\"}"), 4,
    '... the +Inf bucket is the count');
ok(val("sk_timeline_fsync_duration_seconds_count{$i7}") >= 2,
    '... an fdatasync timed per group commit');
# Each append is its own batch here, and each batch ends in its Map-Root
# entry (docs/protocol.md, "The name map"): 2 entries make a tree of 4.
is(val("sk_timeline_tree_size{$i7}"), 4,
    '... tree size 4 (2 entries, each with its Map-Root)');
is(val("sk_timeline_appends_refused{$i7}"), 0, '... appends not refused');
is(val("sk_timeline_http_requests_total{$i7,endpoint=\"append\",code=\"201\"}"),
    2, '... 2 requests to /append answered 201');
is(val("sk_timeline_http_requests_total{$i7,endpoint=\"append\",code=\"403\"}"),
    1, '... and 1 answered 403');
ok(val("sk_timeline_http_request_duration_seconds_count{$i7,endpoint=\"checkpoint\"}")
    >= 1, '... the mirror\'s GET /checkpoint timed');
is(val("sk_timeline_http_connections_max{$i7}"), 500,
    '... the connections limit');
is(val("sk_timeline_build_info{$i7}"), 1, '... its build');
ok(val("process_resident_memory_bytes{$i7}") > 1e6, '... its memory');
ok(prom_wait($p, "sk_timeline_published_entries{$i7}", sub { $_[0] == 4 },
    10), '... every entry published in a chunk (chunk_interval 1)');
is(val("sk_timeline_publish_lag_seconds{$i7}"), 0, '... no publication lag');
is(val("sk_timeline_appends_pending{$i7}"), 0, '... no 202 pending');

# The checkpoint age is the time since the timeline's own signature (the
# last chunk's TFM, or its checkpoint_interval's): a reader's GET
# /checkpoint, signed for it, does not reset it (it measured polling, not
# signing).
sub age {
    my ($tid) = @_;
    my ($v) = scrape("http://127.0.0.1:$mport{$tid}/metrics")->{body}
        =~ /^sk_timeline_checkpoint_age_seconds (\S+)$/m;
    return $v;
}
is(val("sk_timeline_checkpoint_interval_seconds{$i7}"), 3600,
    'timeline 7: checkpoint_interval 3600');
ok(wait_until(sub { (age(7) // 0) >= 2 }, 10), 'checkpoint age: 2 s since '
    . 'the last chunk') or diag(age(7));
is(SKTimeline::http('GET', "$t{7}{url}/checkpoint")->{code}, 200,
    'GET /checkpoint');
cmp_ok(age(7), '>=', 2, '... does not reset it');
# Timeline 8 signs every second by itself, read or not.
cmp_ok(age(8), '<', 3, 'timeline 8 (checkpoint_interval 1): signed within '
    . 'seconds, with no reader');

is(val('sk_mirror_entries_synced_total{tid="7"}'), 4,
    'mirror: 4 entries synced from timeline 7 (2 and their Map-Roots)');
is(val('sk_mirror_entries{tid="8"}'), 4, '... 4 stored from timeline 8');
is(val('sk_mirror_lag_entries{tid="7"}'), 0, '... no lag');
is(val('sk_mirror_timeline_state{tid="7",state="Idle"}'), 1,
    '... timeline 7 Idle');
is(val('sk_mirror_timeline_state{tid="7",state="Stuck"}'), 0,
    '... not Stuck');
is(val('sk_mirror_servable_timelines'), 2, '... 2 servable');
is(val('sk_mirror_answers_total{kind="answer"}'), 2, '... 2 answers');
is(val('sk_mirror_answers_total{kind="bad_request"}'), 1, '... 1 bad name');
is(val('sk_mirror_answer_cache_lookups_total{result="hit"}'), 1,
    '... 1 cache hit');
is(val('sk_mirror_answer_cache_lookups_total{result="miss"}'), 1,
    '... 1 cache miss');
is(val('sk_mirror_http_requests_total{endpoint="query",code="200"}'), 2,
    '... 2 queries answered 200');
is(val('sk_mirror_http_request_duration_seconds_count{endpoint="query"}'), 3,
    '... 3 query latencies');
ok(val('sk_mirror_answer_cache_bytes') > 0, '... answers kept in memory');
is(val('sk_mirror_answer_cache_evictions_total'), 0, '... none evicted');
ok(val('sk_mirror_sync_rounds_total{tid="7",result="ok"}') >= 1,
    '... sync rounds with timeline 7');
ok(val('sk_mirror_last_sync_success_timestamp_seconds{tid="7"}') > time - 60,
    '... the last good one recent');
is(val('sk_mirror_redis_errors_total'), 0, '... no Redis errors');

# A client spending its own SK's Change-Services budget (sk_budget 1):
# counted as its business, the timeline operator is not paged.
is(append($t{7}, cs_entry(name => 'a.example', services => 'https:1',
    key => $sk{a}))->{code}, 201, 'a Change-Services');
is(append($t{7}, cs_entry(name => 'a.example', services => 'https:2',
    key => $sk{a}))->{code}, 503, 'another: the SK\'s budget is spent (503)');
ok(prom_wait($p, "sk_timeline_appends_total{$i7,result=\"budget\"}",
    sub { $_[0] == 1 }, 10), '... counted as budget');

# The alert rules on the real series, each fault caused for real.
sub pending {
    my ($name, $sel, $secs) = @_;
    return prom_wait($p, "count(ALERTS{alertname=\"$name\"$sel,"
        . 'alertstate="pending"})', sub { $_[0] == 1 }, $secs // 10);
}
sub alerts {
    my $a = prom_query($p, 'ALERTS') // [];
    return join ' ', sort map { $_->{metric}{alertname} } @$a;
}
is(alerts(), '', 'healthy, and a client\'s spent budget: no alert');

# A timeline that goes away: down, Stuck at the mirror, which is left
# with one servable timeline and cannot answer.
my $i8 = "instance=\"127.0.0.1:$mport{8}\"";
stop_daemon($t{8}{pid});
ok(prom_wait($p, 'sk_mirror_timeline_state{tid="8",state="Stuck"}',
    sub { $_[0] == 1 }, 15), 'timeline 8 stopped: Stuck in Prometheus');
is(val('sk_mirror_servable_timelines'), 1, '... 1 servable');
ok(pending('SKTimelineDown', ",$i8"), 'SKTimelineDown pending for it');
ok(pending('SKMirrorTimelineStuck', ',tid="8"'),
    'SKMirrorTimelineStuck pending for timeline 8');
my $stuck = prom_query($p, 'ALERTS{alertname="SKMirrorTimelineStuck"}');
ok($stuck && @$stuck == 1 && !exists $stuck->[0]{metric}{state},
    '... without a state label (Stuck turning Defunct stays one alert)');
ok(pending('SKMirrorCannotAnswer', ''), 'SKMirrorCannotAnswer pending');
is(alerts(), 'SKMirrorCannotAnswer SKMirrorTimelineStuck SKTimelineDown',
    '... and no other alert');

# The mirror stopped.
stop_daemon($m->{pid});
ok(pending('SKMirrorDown', ''), 'the mirror stopped: SKMirrorDown pending');

stop_daemon($p->{pid});
stop_daemon($t{7}{pid});
done_testing();
