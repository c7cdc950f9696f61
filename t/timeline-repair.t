#!/usr/bin/perl
# sk-timeline never signs a tree that contradicts one it signed: a log cut
# by a few bytes (an acknowledged entry lost) refuses to start, naming the
# file, offset and SN, and changes nothing; `--check` names each problem;
# `--repair` restores the entry from the timeline's own chunks, from a real
# sk-mirror's copy or from a dump of /entry answers, and the timeline goes
# on without reusing an SN.  A repair source holding another entry signed
# for the same SN is a fork that already happened: refused.  Damaged
# certs.log, chunks/index and a lost signed-head likewise.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Path qw(remove_tree);
use MIME::Base64 qw(decode_base64);
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
mkdir "$d/tl";
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my $sk = ed25519_key($d, 'sk');
my $crt = issue($d, $ca, $sk, 'example.com', "$d/example");
my $inter = make_intermediate($d, $ca, 'inter');

my $t = start_timeline("$d/tl", operator_key => "$d/operator.pub",
    chunk_interval => 1);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));

sub tl { return run_cmd([$SKTimeline::TL, @_, '-c', "$d/tl/tl.conf"]) }

# A timeline that never took an entry, stopped cleanly: nothing to report.
mkdir "$d/empty";
my $e0 = start_timeline("$d/empty", operator_key => "$d/operator.pub");
ok($e0->{up}, 'an empty sk-timeline listens') or diag(slurp($e0->{log}));
is(stop_daemon($e0->{pid}), 0, '... and stops cleanly');
my $r0 = run_cmd([$SKTimeline::TL, '--check', '-c', "$d/empty/tl.conf"]);
is($r0->{rc}, 0, '--check: an empty data_dir passes') or diag($r0->{err});
like($r0->{out}, qr{index: ok: 0 entries}, '... its index as the log implies');

my $n = 0;
sub add {
    my ($e) = @_;
    my $r = append($t, $e);
    is($r->{code}, 201, 'entry ' . $n++ . ' stored') or diag($r->{body});
    return $r->{body};
}

sub checkpoint {
    my $r = http('GET', "$t->{url}/checkpoint");
    return join ' ', (split /\n/, $r->{body})[1, 2];
}

sub cs { cs_entry(name => 'example.com', services => "https:$_[0]", key => $sk) }

add(root_entry(cert => "$ca.crt", key => $op));
add(bind_entry(name => 'example.com', key => $sk, chain => [$crt]));
my $nk = ed25519_key($d, 'n');
add(bind_entry(name => 'n.example', key => $nk,
    chain => [issue($d, $inter, $nk, 'n.example', "$d/n"), "$inter.crt"]));
add(cs($_)) for 1 .. 3;
# Six appends, each a batch ended by its Map-Root entry: twelve entries.
ok(wait_until(sub { http('GET', "$t->{url}/status")->{body}
    =~ /^Max-Published-SN: 11$/m }, 10), 'all twelve published');
my $head = checkpoint();
stop_daemon($t->{pid});

my $r = tl('--check');
is($r->{rc}, 0, '--check: a healthy data_dir passes');
like($r->{out}, qr/: ok: 12 entries, signed head 12, 12 entries in \d+ chunks$/m,
    '... saying what it holds');
my $sh = slurp("$d/tl/signed-head");
ok(length($sh) == 256
    && $sh =~ /^signed-head 1 7 12 [A-Za-z0-9_-]{43} [0-9a-f]{16} +$/m,
    'signed-head holds the tree of twelve');

# The issue's probe: cut a few bytes off the end of entries.log.  The old
# daemon started, served the entries before and stamped the last SN (here
# SN 11, a Map-Root entry) again: a fork.
my $log = slurp("$d/tl/entries.log");
my $cut = substr($log, 0, length($log) - 5);
my $lastoff = length($log) - length((parse_entries($log))[-1]);
spew("$d/tl/entries.log", $cut);
restart_timeline($t);
ok(!$t->{up}, 'an acknowledged entry cut short: refuses to start');
is(stop_daemon($t->{pid}) >> 8, 78, '... exit 78');
like(slurp($t->{log}), qr/entries\.log: offset $lastoff \(SN 11\): the log ends here, yet signed-head says SN 0\.\.11 were signed/,
    '... naming the file, the offset and the SN');
is(slurp("$d/tl/entries.log"), $cut, '... nothing truncated');

$r = tl('--check');
is($r->{rc}, 1, '--check fails');
like($r->{out}, qr/entries\.log: offset $lastoff \(SN 11\)/, '... naming the log');
like($r->{out}, qr/chunks\/index: line \d+: chunk ends at SN 11, past the log's 11 entries/,
    '... and the chunk that holds what it lacks');
like($r->{out}, qr/: \d+ problems?$/m, '... and counting');

$r = tl('--repair');
is($r->{rc}, 0, '--repair from the chunks') or diag($r->{out}, $r->{err});
like($r->{out}, qr/entries\.log: SN 11\.\.11 restored/, '... restores SN 11');
my $piece = length($cut) - $lastoff;
like($r->{out}, qr/repair-\d+\/entries\.log\.from-$lastoff: $piece bytes kept there/,
    '... keeping the cut piece aside');
is(slurp("$d/tl/entries.log"), $log, '... the log as it was');
is(tl('--check')->{rc}, 0, '--check passes again');
restart_timeline($t);
ok($t->{up}, 'starts again') or diag(slurp($t->{log}));
is(checkpoint(), $head, 'the same tree as before the damage');
like(add(cs(4)), qr/^SN: 12$/m, 'the next entry is SN 12: no SN reused');

# An entry in no chunk yet, and the chunks lost too: a real mirror's copy.
my $m = start_mirror("$d/m", [[7, $t->{url}, "$d/tl/timeline.pub"]]);
ok($m->{up}, 'sk-mirror listens') or diag(slurp($m->{log}));
ok(wait_until(sub { my $s = mirror_status($m);
    $s && $s->{timelines}[0]{entries} == 14 }, 20), 'the mirror has all 14');
stop_daemon($m->{pid});
stop_daemon($t->{pid});
$log = slurp("$d/tl/entries.log");
my @e = parse_entries($log);
spew("$d/tl/entries.log", substr($log, 0, length($log) - length($e[-1])));
remove_tree("$d/tl/chunks");
$r = tl('--repair');
is($r->{rc}, 1, 'no source holds SN 13: --repair refuses');
like($r->{out}, qr/SN 13 is in no source, yet signed-head says entries up to SN 13 were signed: give a mirror's copy as FROM; nothing changed/,
    '... saying what to give it');
$r = tl('--repair', "$d/m/data/tl-7/entries");
is($r->{rc}, 0, "--repair from the mirror's copy") or diag($r->{out});
is(slurp("$d/tl/entries.log"), $log, '... the log restored');
is(tl('--check')->{rc}, 0, '--check passes');
restart_timeline($t);
ok($t->{up}, 'starts again');
ok(wait_until(sub { http('GET', "$t->{url}/status")->{body}
    =~ /^Max-Published-SN: 13$/m }, 10), '... and publishes the chunks anew');

# Not yet published at all: a dump of /entry/<sn> answers does it.
$t->{conf}{chunk_interval} = 3600;
stop_daemon($t->{pid});
restart_timeline($t);
add(cs(5));
my $e7 = http('GET', "$t->{url}/entry/15")->{body};     # its Map-Root entry
my $dump = join '', map { http('GET', "$t->{url}/entry/$_")->{body} } 0 .. 15;
spew("$d/dump", $dump);
$head = checkpoint();
stop_daemon($t->{pid});
$log = slurp("$d/tl/entries.log");
spew("$d/tl/entries.log", substr($log, 0, length($log) - 1));
restart_timeline($t);
ok(!$t->{up}, 'SN 15 lost before any chunk: refuses');
stop_daemon($t->{pid});

# A source with another entry signed by this timeline for SN 15 is a fork
# that already happened: evidence, not material.
my %f = map { /^([^:]+): (.*)$/ ? ($1 => $2) : () } split /\n/, $e7;
$f{'Map-Names'} = 666;
$f{Signature} = 'N/A';
my $text = canon('Map-Root', { map { $_ => $f{$_} }
    grep { $_ ne 'Map-Root' } keys %f });
$f{Signature} = b64url(ed_sign("$d/tl/timeline.key", $text));
spew("$d/fork", canon('Map-Root', { map { $_ => $f{$_} }
    grep { $_ ne 'Map-Root' } keys %f }));
$r = tl('--repair', "$d/fork", "$d/dump");
is($r->{rc}, 1, 'a forking source: --repair refuses');
like($r->{out}, qr/SN 15: \S+ and \S+ hold different entries, both signed by this timeline's key: it forked already/,
    '... naming both');
is(slurp("$d/tl/entries.log"), substr($log, 0, length($log) - 1),
    '... and changes nothing');
$r = tl('--repair', "$d/dump");
is($r->{rc}, 0, '--repair from the dump') or diag($r->{out});
restart_timeline($t);
ok($t->{up}, 'starts again');
is(checkpoint(), $head, 'the same tree as before');
stop_daemon($t->{pid});

# certs.log cut inside the line an entry refers to: refused, unchanged;
# the chunks hold the canonical entry, so --repair puts the line back.
$t->{conf}{chunk_interval} = 1;
restart_timeline($t);
ok(wait_until(sub { http('GET', "$t->{url}/status")->{body}
    =~ /^Max-Published-SN: 15$/m }, 10), 'published again');
stop_daemon($t->{pid});
my $certs = slurp("$d/tl/certs.log");
spew("$d/tl/certs.log", substr($certs, 0, 100));
restart_timeline($t);
ok(!$t->{up}, 'a certificate line cut short: refuses');
like(slurp($t->{log}), qr/entries\.log: offset \d+ \(SN 4\): certificate \@\S+ is not in certs\.log/,
    '... naming the entry');
is(slurp("$d/tl/certs.log"), substr($certs, 0, 100), '... certs.log untouched');
stop_daemon($t->{pid});
$r = tl('--repair');
is($r->{rc}, 0, '--repair') or diag($r->{out});
is(slurp("$d/tl/certs.log"), $certs, '... puts the line back');
is(tl('--check')->{rc}, 0, '--check passes');

# chunks/index cut: refused; --repair makes it anew from the files.
my $index = slurp("$d/tl/chunks/index");
spew("$d/tl/chunks/index", substr($index, 0, length($index) - 3));
restart_timeline($t);
ok(!$t->{up}, 'a cut chunk index: refuses');
like(slurp($t->{log}), qr/chunks\/index: line \d+: (no newline|want)/,
    '... naming the line');
stop_daemon($t->{pid});
$r = tl('--repair');
is($r->{rc}, 0, '--repair') or diag($r->{out});
like($r->{out}, qr/making the index anew from the chunk files/, '... rebuilds the index');
is(tl('--check')->{rc}, 0, '--check passes');

# signed-head lost: what was signed is unknown; refused until --repair.
unlink "$d/tl/signed-head";
restart_timeline($t);
ok(!$t->{up}, 'signed-head missing: refuses');
like(slurp($t->{log}), qr/signed-head: missing, yet entries\.log holds \d+ bytes of entries/,
    '... saying so');
stop_daemon($t->{pid});
is(tl('--repair')->{rc}, 0, '--repair writes it');
restart_timeline($t);
ok($t->{up}, 'starts');
is(checkpoint(), $head, 'the same tree');

# One user of a data_dir at a time.
$r = tl('--repair');
is($r->{rc}, 75, '--repair while it serves: refused');
like($r->{err}, qr/in use by another sk-timeline/, '... saying why');

stop_daemon($t->{pid});
unlike(slurp($t->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
