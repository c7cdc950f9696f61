#!/usr/bin/perl
# sk-timeline chunks: the merge schedule (fanout 2, 3 levels), listings
# (/chunks, since, between), the publisher's lower CPU priority and its
# idle-class compression, chunk files fetched with curl, bunzip2ed, each
# signature and entry checked (openssl for chunks and TFMs, `sk entry
# verify` for entries), the TFM's root against the entries, and the list
# after a restart.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 qw(decode_base64);
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl, curl or bunzip2'
    unless has_cmd('openssl') && has_cmd('curl') && has_cmd('bunzip2');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $sk = ed25519_key($d, 'example');
my $crt = issue($d, $ca, $sk, 'example.com', "$d/example");

my $t = start_timeline($d, operator_key => "$d/operator.pub",
    sk_budget => 100, chunk_interval => 1, chunk_fanout => 2,
    chunk_levels => 3);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));

# The publisher yields to appends: one thread at chunk_nice (default 10),
# the rest at the daemon's own priority.
sub nice_of { (split ' ', (slurp($_[0]) =~ s/^.*\) //sr))[16] }  # stat(5) field 19
my $own = nice_of("/proc/$t->{pid}/stat");
my %nice;
$nice{nice_of($_)}++ for glob "/proc/$t->{pid}/task/*/stat";
SKIP: {
    skip "the test runs at nice $own", 2 if $own >= 10;
    is($nice{10}, 1, 'one thread (the chunk publisher) runs at nice 10')
        or diag(explain(\%nice));
    ok($nice{$own} && keys %nice == 2, "... the others at nice $own")
        or diag(explain(\%nice));
}

my $r = http('GET', "$t->{url}/chunks");
is($r->{code}, 200, '/chunks on an empty log: 200');
is($r->{body}, '', '... and no chunks');
like(http('GET', "$t->{url}/status")->{body}, qr/^Max-Published-SN: N\/A$/m,
    'TFM: nothing published');

sub published {
    my ($want) = @_;
    return wait_until(sub {
        http('GET', "$t->{url}/status")->{body}
            =~ /^Max-Published-SN: $want$/m }, 10);
}

# Eleven appends, each a batch of its own (the entry and the Map-Root
# entry that ends it: SN 2i and 2i + 1), each published by its own tick:
# a binary counter with fanout 2 leaves 0-15 (level 3, final), 16-19
# (level 1), 20-21 (level 0).
my @entries = (root_entry(cert => "$ca.crt", key => $op),
    bind_entry(name => 'example.com', key => $sk, chain => [$crt]),
    map { cs_entry(name => 'example.com', services => "https:$_", key => $sk) }
        1 .. 9);
# The first publication is traced: bzip2 runs in a thread of its own under
# SCHED_IDLE, only on CPU time no other thread wants.
my ($st, $traced) = ("$d/strace.out", 0);
my $tracer = has_cmd('strace') && run_daemon(['strace', '-f', '-qq', '-e',
    'trace=sched_setscheduler', '-o', $st, '-p', $t->{pid}], "$d/strace.log");
$traced = $tracer && wait_until(sub {
    slurp("/proc/$t->{pid}/status") =~ /^TracerPid:\s*[1-9]/m }, 10);
my $ok = 1;
for my $i (0 .. $#entries) {
    $r = append($t, $entries[$i]);
    $ok &&= $r->{code} == 201 && published(2 * $i + 1);
    diag("entry $i: $r->{code} $r->{body}") if !$ok;
    stop_daemon($tracer) if $i == 0 && $tracer;
}
ok($ok, 'eleven entries appended, each published in a chunk');
SKIP: {
    skip 'no strace, or it cannot attach here', 1 unless $traced;
    like(slurp($st), qr/^\d+ +sched_setscheduler\(0, SCHED_IDLE, \[0\]\) = 0$/m,
        'the chunk was compressed by a thread under SCHED_IDLE')
        or diag(slurp($st) . slurp("$d/strace.log"));
}

$r = http('GET', "$t->{url}/chunks");
my @lines = split /\n/, $r->{body};
my @ranges = map { [(split / /)[1, 2]] } @lines;
is_deeply(\@ranges, [[0, 15], [16, 19], [20, 21]],
    'old chunks merged, the newest small') or diag($r->{body});
like($lines[0], qr{^/chunks/0-15\.bz2 0 15 [A-Za-z0-9_-]{86}$},
    'listing line: uri first last signature');

# Fetch, check the signature over the .bz2 bytes, unpack, check entries.
my $pub = "$d/timeline.pub";
my @all;
my ($tfm_ok, $sig_ok, $ent_ok) = (1, 1, 1);
for my $l (@lines) {
    my ($uri, $first, $last, $sig) = split / /, $l;
    my $f = "$d/chunk-$first";
    my $c = run_cmd(['curl', '-sf', '-o', "$f.bz2", "$t->{url}$uri"]);
    spew("$f.sig", decode_base64(($sig =~ tr{-_}{+/}r) . '=='));
    $sig_ok &&= run_cmd(['openssl', 'pkeyutl', '-verify', '-pubin', '-inkey',
        $pub, '-rawin', '-in', "$f.bz2", '-sigfile', "$f.sig"])->{rc} == 0;
    run_cmd(['bunzip2', '-k', "$f.bz2"]);
    my @parts = parse_entries(slurp($f));
    my $tfm = pop @parts;
    is(scalar @parts, $last - $first + 1, "chunk $first-$last: its entries");
    for my $i (0 .. $#parts) {
        my ($sn) = $parts[$i] =~ /^SN: (\d+)$/m;
        $ent_ok &&= defined $sn && $sn == $first + $i;
        spew("$f.e", $parts[$i]);
        my $v = sk('entry', 'verify', '-i', "$f.e", '--timeline-pub', $pub);
        $ent_ok &&= $v->{rc} == 0 && $v->{out} =~ /Signature: good/;
        diag("SN $sn: $v->{err}") if $v->{rc} != 0;
    }
    push @all, @parts;
    like($tfm, qr/^Timeline-Freshness: 1$/m, "chunk $first-$last ends in a TFM");
    like($tfm, qr/^Max-Published-SN: $last$/m, '... published up to its end');
    like($tfm, qr/^Tree-Size: @{[$last + 1]}$/m, '... tree of its end');
    my ($root) = $tfm =~ /^Root-Hash: (\S+)$/m;
    my @leaves = map { leaf_hash($_) } @all;
    $tfm_ok &&= b64url(mth(@leaves)) eq $root;
    my ($tsig) = $tfm =~ /^Signature: (\S+)$/m;
    (my $na = $tfm) =~ s/^Signature: .*$/Signature: N\/A/m;
    spew("$f.tfm", $na);
    spew("$f.tsig", decode_base64(($tsig =~ tr{-_}{+/}r) . '=='));
    $tfm_ok &&= run_cmd(['openssl', 'pkeyutl', '-verify', '-pubin', '-inkey',
        $pub, '-rawin', '-in', "$f.tfm", '-sigfile', "$f.tsig"])->{rc} == 0;
}
ok($sig_ok, 'every chunk signature verifies over the .bz2 bytes');
ok($ent_ok, 'every entry parses, has the next SN, and its timeline '
    . 'signature verifies (sk entry verify)');
ok($tfm_ok, 'every chunk TFM is signed and its root is the entries\' root');
is(join('', @all), read_log($d), 'chunks hold the whole log');

# Since and between.
$r = http('GET', "$t->{url}/chunks/since/15");
is(join(',', map { (split / /)[0] } split /\n/, $r->{body}),
    '/chunks/16-19.bz2,/chunks/20-21.bz2', 'since/15: the two newer chunks');
$r = http('GET', "$t->{url}/chunks/since/16");
like($r->{body}, qr{^/chunks/16-19\.bz2 }, 'since/16: the chunk holding SN 17');
$r = http('GET', "$t->{url}/chunks/since/21");
is($r->{code}, 304, 'since/21 (the newest): 304');
is($r->{body}, '', '... with no body');
$r = http('GET', "$t->{url}/chunks/since/99");
is($r->{code}, 304, 'since a future SN: 304');
for my $bad (qw(abc 01 -1 99999999999999999999), '') {
    $r = http('GET', "$t->{url}/chunks/since/$bad");
    is($r->{code}, 400, "since/'$bad': 400");
}
like($r->{body}, qr/^chunks: bad SN/, '... saying why');
$r = http('GET', "$t->{url}/chunks/between/3/and/16");
is(join(',', map { (split / /)[0] } split /\n/, $r->{body}),
    '/chunks/0-15.bz2,/chunks/16-19.bz2', 'between/3/and/16');
$r = http('GET', "$t->{url}/chunks/between/20/and/20");
like($r->{body}, qr{^/chunks/20-21\.bz2 20 21 \S+\n\z}, 'between/20/and/20');
$r = http('GET', "$t->{url}/chunks/between/9/and/3");
is($r->{code}, 400, 'between, SN1 > SN2: 400');
$r = http('GET', "$t->{url}/chunks/between/x/and/3");
is($r->{code}, 400, 'between, bad SN: 400');
$r = http('GET', "$t->{url}/chunks/between/22/and/30");
is($r->{code}, 404, 'between past the published: 404');
$r = http('GET', "$t->{url}/chunks/0-3.bz2");
is($r->{code}, 404, 'a merged-away chunk: 404');
ok(!-e "$d/chunks/0-3.bz2", '... and its file is gone');
$r = http('GET', "$t->{url}/chunks/../entries.log");
is($r->{code}, 404, 'no path tricks');

# The list survives a restart; publication goes on from there.
my $before = http('GET', "$t->{url}/chunks")->{body};
stop_daemon($t->{pid});
restart_timeline($t);
ok($t->{up}, 'restarts');
is(http('GET', "$t->{url}/chunks")->{body}, $before, 'same chunks after restart');
like(slurp($t->{log}), qr/3 chunks, 22 entries published/, 'logged');
$r = append($t, cs_entry(name => 'example.com', services => 'imaps',
    key => $sk));
ok($r->{code} == 201 && published(23), 'a new entry is published');
# Published (22-23 listed) comes before the merges it sets off, which the
# publisher makes next, compressing under SCHED_IDLE: on a busy machine,
# later.  Wait for them.
sub ranges {
    return join ',', map { join '-', (split / /)[1, 2] } split /\n/,
        http('GET', "$t->{url}/chunks")->{body};
}
my $want = '0-15,16-23';
ok(wait_until(sub { ranges() eq $want }, 30),
    'and merges on: 16-19 + (20-21 + 22-23)') or diag(ranges());

# A broken index refuses to start, naming the line.
stop_daemon($t->{pid});
my $idx = slurp("$d/chunks/index");
spew("$d/chunks/index", $idx =~ s/^16 /17 /mr);
restart_timeline($t);
ok(!$t->{up}, 'a gap in the chunk index refuses to start');
like(slurp($t->{log}), qr/chunks\/index: line 2: chunk starts at 17, not 16/,
    'index error named');
stop_daemon($t->{pid});
unlike(slurp($t->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');

done_testing();
