#!/usr/bin/perl
# bench_revocation.pl -- revocation-latency: seconds from an Unbind (and
# a Rebind of the name to a new SK: a compromised key replaced) accepted
# by every timeline to `sk verify` no longer accepting the old SK's
# carrier, with the defaults (docs/protocol.md, "How fast an Unbind
# reaches clients"); the goal is an hour.
#
# The real daemons, every interval divided by one factor (SCALE, 60), so
# that an hour takes a minute: three sk-timelines (checkpoint_interval and
# chunk_interval 1 s; the default checkpoint_interval is already 1 s, so
# that one is slower than scaled), an sk-mirror (poll_interval and
# query_cache 60 s / SCALE), Debian's nginx with the module serving the
# old SK's carrier and stapling (staple_refresh, staple_retry,
# staple_max_age / SCALE), and two clients whose trust files hold T1..T4 /
# SCALE, each with a cache of its own:
#
#   revocation-latency-staple   sees only the staple (its trust file's
#                               mirror does not answer; the staple's
#                               signer is listed with its key)
#   revocation-latency-mirror   asks the mirror (--no-staple)
#
# Both checked the site (accept) just before the Unbind, so their views
# are as fresh as can be: each then waits out its T1 before it asks again,
# the worst case short of an attacker.  Then `sk verify` for each client
# every POLL seconds until it does not accept; the figure is that time,
# times SCALE (seconds at real scale), next to the hour of the goal.
#
# Environment: BUILD, SCALE (60), POLL (0.2 s), LIMIT (seconds, 120).

use strict;
use warnings;
use POSIX qw(ceil);
use Time::HiRes qw(sleep time);
use SKTest;
use SKTimeline ();
use SKMirror ();
use NginxTest ();
use SKSite;

my $scale = $ENV{SCALE} // 60;
my $poll = $ENV{POLL} // 0.2;
my $limit = $ENV{LIMIT} // 120;

for my $need ($SKTimeline::TL, $SKMirror::MR, $SKTest::SK) {
    if (!-x $need) { print "bench_revocation: $need not built: skipped\n"; exit 0 }
}
if (my $why = NginxTest::nginx_skip()) {
    print "bench_revocation: $why: skipped\n";
    exit 0;
}

# The defaults (real scale), scaled down, at least a second each.
my %real = (t1 => 1800, t2 => 2700, t3 => 21600, t4 => 86400,
    drop_slack => 3600, staple_max_age => 2700, staple_refresh => 600,
    staple_retry => 60, poll_interval => 60, query_cache => 60);
my %sc = map { $_ => ceil($real{$_} / $scale) } keys %real;
my $client = join('', map { "$_ = $sc{$_}\n" }
    qw(t1 t2 t3 t4 drop_slack staple_max_age staple_refresh staple_retry));

my $s = NginxTest->new;
my ($d, $port) = ($s->dir, $s->port);
my $w = world($d, names => { 'example.com' => 'https',
    'heir.example' => 'https' }, rebinders => { 'example.com' => 'heir.example' },
    mirror => { poll_interval => $sc{poll_interval},
        query_cache => $sc{query_cache} });
my $m = $w->{mirror};
my ($tls) = slurp($w->{trust}) =~ /\A((?:timeline = [^\n]*\n)+)/
    or die 'bench_revocation: no timeline lines';
spew("$d/server-trust.conf", slurp($w->{trust}) . $client);
spew("$d/mirror-client.conf", slurp($w->{trust}) . $client);
spew("$d/staple-client.conf", $tls . 'mirror = http://127.0.0.1:'
    . free_port() . " $m->{pub}\n" . $client);

# nginx: the old SK's carrier, stapled.
NginxTest::make_ca($d);
my ($cert, $key) = NginxTest::make_cert($d, 'example.com', 'ec');
my $old = $w->{sk}{'example.com'};
(my $oldpub = $old) =~ s/\.key$/.pub/;
NginxTest::make_carrier($old, $cert, 'example.com', "$d/carrier.pem");
mkdir "$d/scache";
chmod 0777, "$d/scache";
$s->write_conf("    server {\n        listen 127.0.0.1:$port ssl;\n"
    . "        server_name example.com;\n"
    . "        ssl_certificate $cert;\n        ssl_certificate_key $key;\n"
    . "        sovereign_key_public $oldpub;\n"
    . "        sovereign_key_carrier $d/carrier.pem;\n"
    . "        sovereign_key_staple extension;\n"
    . "        sovereign_key_trust $d/server-trust.conf;\n"
    . "        sovereign_key_staple_cache $d/scache;\n    }\n");
$s->start;

# Each client: its trust file, cache and sk verify options.
my %cl = (
    staple => ["$d/staple-client.conf", "$d/cache-staple"],
    mirror => ["$d/mirror-client.conf", "$d/cache-mirror", '--no-staple'],
);
sub verify {
    my ($c) = @_;
    my ($trust, $cache, @opt) = @{$cl{$c}};
    my $r = sk('verify', '--trust', $trust, '--cache', $cache, @opt,
        '--connect', "127.0.0.1:$port", "https://example.com:$port");
    my %dec = (0 => 'accept', 1 => 'reject', 3 => 'none', 4 => 'insecure',
        5 => 'undecided');
    return ($r->{rc}, $dec{$r->{rc}} // "exit $r->{rc}", $r);
}
for my $c (sort keys %cl) {
    my $r;
    wait_until(sub { (my $rc, undef, $r) = verify($c); $rc == 0 }, 30)
        or die "bench_revocation: the $c client does not accept the site "
            . "before the Unbind:\n$r->{out}$r->{err}" . $s->log;
}

# The Unbind and the Rebind to a new SK (by heir.example), on every
# timeline; t0 once the last has taken both.
my $new = SKTimeline::ed25519_key($d, 'sk-example.com-new');
my $ev = SKTimeline::issue($d, $w->{tlca}, $new, 'example.com', "$d/ev-new");
my @e = (SKTimeline::unbind_entry(name => 'example.com', key => $old),
    SKTimeline::rebind_entry(name => 'example.com', key => $new,
        rebinder => 'heir.example', rebinder_key => $w->{sk}{'heir.example'},
        chain => [$ev]));
for my $c (sort keys %cl) {
    verify($c);                         # the freshest view they can have
}
for my $e (@e) {
    for my $tid (sort keys %{$w->{timelines}}) {
        my $a = SKTimeline::append($w->{timelines}{$tid}, $e);
        die "bench_revocation: timeline $tid: $a->{code} $a->{body}"
            if $a->{code} != 201;
    }
}
my $t0 = time;

my (%at, %how);
while (keys %at < keys %cl && time - $t0 < $limit) {
    for my $c (grep { !exists $at{$_} } sort keys %cl) {
        my ($rc, $dec) = verify($c);
        if ($rc != 0) {
            $at{$c} = time - $t0;
            $how{$c} = $dec;
        }
    }
    sleep $poll;
}
$s->stop;
stop_world($w);

printf "scale 1/%d: T1 %d s, T2 %d s, staple_max_age %d s, staple_refresh "
    . "%d s, mirror poll_interval and query_cache %d s, checkpoint_interval "
    . "1 s (%d s at real scale; its default is 1 s)\n", $scale, $sc{t1},
    $sc{t2}, $sc{staple_max_age}, $sc{staple_refresh}, $sc{poll_interval},
    $scale;
for my $c (sort keys %cl) {
    if (!exists $at{$c}) {
        printf "%s client: still accepting after %d s (%d s at real "
            . "scale)\n", $c, $limit, $limit * $scale;
        $at{$c} = $limit;
        $how{$c} = 'accept';
    }
    printf "%s client: %s after %.1f s scaled\n", $c, $how{$c}, $at{$c};
}
# A staple-only client learns the Rebind's rebinder (heir.example) from
# nowhere: the Rebind is not judged, the old SK is not accepted, no
# decision is made (docs/protocol.md, "Freshness").
print "(undecided: the Rebind's rebinder cannot be learnt from the staple "
    . "alone; the old SK's carrier is no longer accepted)\n"
    if ($how{staple} // '') eq 'undecided';
for my $c (sort keys %cl) {
    printf "BENCH revocation-latency-%s %.0f s ref=3600 ratio=%.4f "
        . "target=1\n", $c, $at{$c} * $scale, $at{$c} * $scale / 3600;
}
