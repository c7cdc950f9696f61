#!/usr/bin/perl
# Debian's nginx in front of sk-timeline and sk-mirror with the examples
# users copy, dist/nginx/sk-timeline-front.conf and sk-mirror-front.conf
# (TLS and the daemons' ports replaced for the test, nothing else):
#   - nginx takes them (nginx -t), appends and queries pass through
#   - mirror answers are cached by URI (MISS, then HIT, the same bytes),
#     those of queries with a nonce not
#   - limit_req: one address past its rate gets 429 from nginx
#   - trusted_proxies: behind nginx each client keeps its own budget in
#     the daemon (X-Real-IP), one client's 429 is not another's

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use HTTP::Tiny;
use SKTest;
use SKTimeline;
use SKMirror;
use SKLoad;
use NginxTest;

my ($n, $dir, $tp) = NginxTest->setup;
plan skip_all => 'sk-timeline, sk-mirror or flood not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR && -x $SKLoad::FLOOD;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = SKTimeline::make_ca($d, 'testca');
my $sk = ed25519_key($d, 'a');
my $crt = issue($d, $ca, $sk, 'a.example', "$d/a");
my ($t, $tl) = start_timelines($d, [1, 2], [root_entry(cert => "$ca.crt",
    key => $op), bind_entry(name => 'a.example', key => $sk,
    chain => [$crt])], chunk_interval => 1, trusted_proxies => '127.0.0.1');
my $m = start_mirror("$d/m", $tl, trusted_proxies => '127.0.0.1',
    rate_per_client => 2, rate_burst => 5);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 20),
    'both timelines Idle');
my %keys = map { $_ => ["$d/tl$_/timeline.pub", "sk-timeline-$_"] } 1, 2;

# An example as shipped, on a plain port of the test's, to the daemon's.
sub front {
    my ($file, $port, $upstream) = @_;
    my $c = slurp("$SKTest::ROOT/dist/nginx/$file");
    for my $edit ([qr/^\s*listen \[::\]:443 ssl;\n/m, ''],
                  [qr/listen 443 ssl;/, "listen 127.0.0.1:$port;"],
                  [qr/^\s*ssl_certificate_key .*\n/m, ''],
                  [qr/^\s*ssl_certificate .*\n/m, ''],
                  [qr/127\.0\.0\.1:84[78]0/, "127.0.0.1:$upstream"]) {
        $c =~ s/$edit->[0]/$edit->[1]/g or die "$file: no $edit->[0]";
    }
    $c =~ s{/var/cache/nginx/sk-mirror}{$dir/cache};
    return $c;
}
my $mp = $n->port('mirror');
$n->write_conf(front('sk-timeline-front.conf', $tp, $t->{1}{port})
    . front('sk-mirror-front.conf', $mp, $m->{port}));
my $r = $n->test_conf;
is($r->{rc}, 0, 'nginx -t takes both examples') or diag($r->{err});
$n->start;

sub get {
    my ($from, $path) = @_;
    my $r = HTTP::Tiny->new(local_address => $from, timeout => 10)
        ->get("http://127.0.0.1:$mp$path");
    return { code => $r->{status}, body => $r->{content},
        cache => $r->{headers}{'x-cache-status'} // '' };
}

# Queries through the front, cached by URI.
$r = get('127.0.0.2', '/query/a.example');
is($r->{code}, 200, 'a query through nginx: 200');
ok(check_answer($r->{body}, $m->{pub}, \%keys, 'a.example')->{ok},
    '... a valid answer');
is($r->{cache}, 'MISS', '... not from the cache');
my $again = get('127.0.0.2', '/query/a.example');
is("$again->{code} $again->{cache}", '200 HIT', 'asked again: a HIT');
is($again->{body}, $r->{body}, '... the same answer');
is(get('127.0.0.2', '/query/a.example?since=5')->{cache}, 'MISS',
    'another since: its own answer');

# A query with a nonce (docs/protocol.md, "Nonces") is for itself alone:
# past nginx's cache, the daemon's cached answer and its trailer.
for my $nonce ('A' x 42 . 'E', 'B' x 42 . 'A') {
    my $nq = get('127.0.0.6', "/query/a.example?nonce=$nonce");
    is("$nq->{code} $nq->{cache}", '200 BYPASS',
        "a nonce: past nginx's cache");
    is(nonce_answer($nq->{body} // '', $nonce, $m->{pub}), $r->{body},
        '... the answer as cached, its nonce signed by the mirror');
}

# The daemon's budget (2 a second, 5 at once) is each client's, though all
# come through nginx: one address spends its own, another keeps its.
my @codes = map { get('127.0.0.3', "/query/a.example?since=$_")->{code} }
    100 .. 109;
ok((grep { $_ == 429 } @codes) > 0,
    'one client past rate_per_client behind nginx: 429 from the daemon')
    or diag("@codes");
is(get('127.0.0.4', '/query/a.example?since=200')->{code}, 200,
    '... another client behind the same nginx: 200');

# nginx's limit_req: one address flooding a cached answer gets 429.
my $f = flood($mp, ['127.0.0.5'], 8, 'get', '/query/a.example', 2);
my $fr = flood_end($f);
ok(($fr->{codes}{200} // 0) > 0 && ($fr->{codes}{429} // 0) > 0,
    "limit_req: one address flooding: 429 past its rate ($fr->{codes}{200} "
    . "answered, $fr->{codes}{429} refused)");

# Appends through the front.
$r = http('POST', "http://127.0.0.1:$tp/append", bind_entry(
    name => 'b.example', key => $sk, chain => [issue($d, $ca, $sk,
    'b.example', "$d/b")]));
is($r->{code}, 201, 'a Bind through nginx: 201') or diag($r->{body});
$f = flood($tp, ['127.0.0.6'], 8, 'get', '/append', 2);
$fr = flood_end($f);
ok(($fr->{codes}{429} // 0) > 0, 'limit_req on /append: 429 past its rate');

$n->stop;
is($n->alerts, '', 'nginx: no alerts');
stop_daemon($_->{pid}) for $m, values %$t;
done_testing();
