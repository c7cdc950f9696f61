#!/usr/bin/perl
# sk-milter's /metrics (MetricsListen) behind a private Postfix: real mails
# through it (swaks) give one count per sk= verdict, a dead KeyCache a
# temperror and a key cache error, the Probe a STARTTLS handshake with the
# served chain (no carrier in it), policy lookups over the PolicySocket
# (postmap) their answers by result and their times, PostfixCommand's
# runs, connections; each answer passes `promtool check metrics`, and a
# real Prometheus scrapes the same values, runs the Grafana dashboard's
# sk-milter queries and, with the alert rules, sees the faults caused for
# real: the KeyCache down, policy lookups failing, PolicyMaxConnections
# reached, the milter stopped.
# A bad MetricsListen fails `sk-milter -n`, one in use refuses to start,
# both naming the setting.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKPostfix qw(make_cert);
use SKPrometheus;
use IO::Socket::INET;

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
for (qw(postfix postmap smtp-sink swaks)) {
    plan(skip_all => "no $_") unless has_cmd($_);
}
plan(skip_all => 'no prometheus/promtool') unless have_prometheus();

my $dir = tmpdir();
my ($mport, $pport, $xport, $dead) = map { free_port() } 1 .. 4;
my ($key, $crt) = make_cert($dir, 'mx.example.org');
spew("$dir/chain.pem", slurp($key) . slurp($crt), 0600);
spew("$dir/trust", "example.com smtp,smtps,submission\nweb.example https\n");

sub conf {
    my ($file, @extra) = @_;
    spew($file, join('', map { "$_\n" } "Socket inet:$mport\@127.0.0.1",
        'Name mx.example.org', "TrustFile $dir/trust", 'Syslog no',
        "KeyCache redis://127.0.0.1:$dead", "PidFile $dir/sk-milter.pid",
        "PolicySocket inet:$pport\@127.0.0.1", 'PolicyMaxConnections 2',
        @extra));
    return $file;
}

# Off by default; a bad address is refused by -n, naming the setting.
my $r = run_cmd([$skm, '-n', '-c', conf("$dir/bad.conf",
    'MetricsListen nowhere')]);
isnt($r->{rc}, 0, '-n: MetricsListen nowhere refused');
like($r->{err}, qr/line 9: illegal value "nowhere" for "MetricsListen"/,
    '... naming the setting and its line');

my $pf = SKPostfix->new(dir => $dir, milter => "inet:127.0.0.1:$mport",
    chain => "$dir/chain.pem")->start;
my $conf = conf("$dir/sk-milter.conf", "MetricsListen 127.0.0.1:$xport",
    "ChainFile $dir/chain.pem $dir/served.pem", 'PostfixCommand true',
    "Probe starttls 127.0.0.1:$pf->{smtp}");
$r = run_cmd([$skm, '-n', '-c', $conf]);
is($r->{rc}, 0, '-n: MetricsListen 127.0.0.1:PORT accepted') or diag($r->{err});
my $log = "$dir/milter.log";
my $mpid = run_daemon([$skm, '-f', '-c', $conf], $log);
ok(wait_for_port($mport) && wait_for_port($xport), 'milter and metrics listen')
    or diag(slurp($log));

# The address in use: a second milter refuses to start.
my $conf2 = "$dir/second.conf";
spew($conf2, slurp($conf) =~ s/inet:$mport\@/"inet:" . free_port() . '@'/er
    =~ s/inet:$pport\@/"inet:" . free_port() . '@'/er
    =~ s/^PidFile .*\n//mr =~ s/^(ChainFile|Probe) .*\n//mgr);
my $pid2 = run_daemon([$skm, '-f', '-c', $conf2], "$dir/second.log");
ok(wait_until(sub { !daemon_alive($pid2) }, 10), 'MetricsListen in use: '
    . 'the second milter exits');
like(slurp("$dir/second.log"), qr/MetricsListen 127\.0\.0\.1:$xport/,
    '... naming the setting');

sub swaks {
    my (@args) = @_;
    return run_cmd(['swaks', '--server', '127.0.0.1', '--port', $pf->{smtp},
        '--to', 'bob@dest.example', '--timeout', '10', @args]);
}
is(swaks('--from', 'alice@example.com', '--tls')->{rc}, 0, 'mail over TLS');
is(swaks('--from', 'alice@example.com')->{rc}, 0, 'mail over plaintext');
like(swaks('--from', 'dave@nosk.example')->{out}, qr/\b451 4\.7\.0/,
    'KeyCache down: a sender it must answer for is tempfailed');
ok($pf->wait_messages(2), 'two messages delivered') or diag($pf->log);

my $map = "socketmap:inet:127.0.0.1:$pport";
sub pq {
    my ($name, $k) = @_;
    my $q = run_cmd(['postmap', '-c', $pf->{etc}, '-q', $k, "$map:$name"]);
    return $q->{out} . $q->{err};
}
pq('sk', 'web.example');                # NOTFOUND: its SK lacks smtp
pq('sk', 'web.example');                # the same, from the answer cache
like(pq('sk', 'example.com'), qr/sovereign key/, 'policy: TEMP (its SK\'s '
    . 'key is to come from the KeyCache, which is down)');
pq('other', 'example.com');            # PERM: not the PolicyMapName

ok(wait_until(sub { slurp($log) =~ /probe starttls/ }, 10), 'probe ran')
    or diag(slurp($log));
my $s = scrape("http://127.0.0.1:$xport/metrics");
is($s->{code}, 200, 'GET /metrics');
like($s->{type}, qr{^text/plain; version=0\.0\.4}, '... exposition format');
$r = promtool({ stdin => $s->{body} }, 'check', 'metrics');
is($r->{rc}, 0, '... promtool check metrics: clean') or diag($r->{out} . $r->{err});

my %v = map { /^(\S+) (\S+)$/ ? ($1 => $2) : () } split /\n/, $s->{body};
my %want = (
    'sk_milter_messages_total{verdict="pass"}' => 1,
    'sk_milter_messages_total{verdict="fail"}' => 1,
    'sk_milter_messages_total{verdict="none"}' => 0,
    'sk_milter_messages_total{verdict="temperror"}' => 1,
    'sk_milter_policy_answers_total{result="notfound"}' => 2,
    'sk_milter_policy_answers_total{result="temp"}' => 1,
    'sk_milter_policy_answers_total{result="perm"}' => 1,
    'sk_milter_policy_answers_total{result="ok"}' => 0,
    'sk_milter_policy_lookup_duration_seconds_count' => 4,
);
is($v{$_}, $want{$_}, $_) for sort keys %want;
cmp_ok($v{'sk_milter_key_cache_errors_total'} // 0, '>=', 2,
    'KeyCache errors counted (message and policy lookup)');
cmp_ok($v{'sk_milter_handshakes_total{result="no_carrier"}'} // 0, '>=', 1,
    'Probe: a STARTTLS handshake, no carrier served');
cmp_ok($v{'sk_milter_policy_lookup_duration_seconds_bucket{le="+Inf"}'} // 0,
    '==', 4, 'every lookup in the histogram');
is($v{sk_milter_policy_lookups_in_flight}, 0, 'no lookup in flight');
is($v{'sk_milter_postfix_command_total{result="ok"}'}, 1,
    'PostfixCommand ran once, after the chain file was written');
is($v{'sk_milter_connections_refused_total{socket="Socket"}'}, 0,
    'no connection refused');
like($s->{body}, qr/^sk_milter_build_info\{version="[^"]+"\} 1$/m,
    'the build');
ok(($v{process_open_fds} // 0) > 3, 'process series');

# The same through a real Prometheus, with the alert rules loaded.
my $p = start_prometheus($dir, { 'sk-milter' => ["127.0.0.1:$xport"] },
    ["$SKTest::ROOT/dist/prometheus/sk-alerts.yml"]);
ok($p->{up}, 'prometheus ready') or diag(slurp($p->{log}));
ok(prom_wait($p, 'sk_milter_messages_total{verdict="pass"}',
    sub { $_[0] == 1 }, 15), 'Prometheus reads sk=pass once');
ok(prom_wait($p, 'sum(sk_milter_policy_answers_total)',
    sub { $_[0] == 4 }, 15), 'Prometheus reads four policy answers');
# (Their names: milter-staple.t, where the staple's and the carrier's
# gauges exist.)
is_deeply([dashboard_check($p, 'sk-milter', undef)], [],
    'dashboard: the sk-milter queries run');

# The faults, as the alert rules see them.
sub pending {
    my ($name, $sel) = @_;
    return prom_wait($p, "count(ALERTS{alertname=\"$name\"$sel,"
        . 'alertstate="pending"})', sub { $_[0] == 1 }, 15);
}
# (Those before the first scrape are no rate: one more of each.)
like(pq('sk', 'nosk.example'), qr/sovereign key lookup of nosk\.example/,
    'policy: TEMP again (no StapleTrust: its KeyCache record may be there, '
    . 'and the KeyCache is down)');
ok(pending('SKMilterKeyCacheErrors', ''), 'KeyCache down: '
    . 'SKMilterKeyCacheErrors');
ok(pending('SKMilterPolicyLookupsFailing', ''), 'a TEMP policy answer: '
    . 'SKMilterPolicyLookupsFailing');
# PolicyMaxConnections 2: a third client at once is refused.
my @held = map { IO::Socket::INET->new("127.0.0.1:$pport") } 1 .. 2;
ok(wait_until(sub { scrape("http://127.0.0.1:$xport/metrics")->{body}
    =~ /^sk_milter_connections\{socket="PolicySocket"\} 2$/m }, 10),
    'two policy connections open');
my $third = IO::Socket::INET->new("127.0.0.1:$pport");
ok(prom_wait($p, 'sk_milter_connections_refused_total{socket="PolicySocket"}',
    sub { $_[0] == 1 }, 10), 'a third refused at PolicyMaxConnections');
ok(pending('SKMilterConnectionsRefused', ',socket="PolicySocket"'),
    '... SKMilterConnectionsRefused');
close $_ for @held, grep { defined } $third;

is(stop_daemon($mpid), 0, 'SIGTERM: clean exit');
ok(pending('SKMilterDown', ''), 'the milter stopped: SKMilterDown');
stop_daemon($p->{pid});
$pf->stop;
done_testing();
