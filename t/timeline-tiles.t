#!/usr/bin/perl
# sk-timeline's tree as C2SP tlog-tiles, checked by an independent client:
# t/go/tlogcheck, built on golang.org/x/mod/sumdb/tlog and sumdb/note (the
# Go checksum database's own code), fetches tiles and entry bundles over
# HTTP from a real sk-timeline, verifies both checkpoints' signatures, the
# inclusion of every entry and the consistency of two checkpoint sizes.
# Then the caching headers, the refusals, and the tiles across restarts:
# kept (only the right edge hashed again), damaged, missing, --check and
# --repair.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'go is absent (apt-get install golang-go '
    . 'golang-golang-x-mod-dev; scripts/install-deps.sh does)'
    unless has_cmd('go');
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $client = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/bench/tl_client';
my $gopath = '/usr/share/gocode';
ok(-d "$gopath/src/golang.org/x/mod/sumdb/tlog",
    'golang-golang-x-mod-dev is installed (go is)')
    or BAIL_OUT('go without golang.org/x/mod: apt-get install golang-golang-x-mod-dev');
ok(-x $client, 'tl_client is built') or BAIL_OUT("no $client (make all)");

my $d = tmpdir();
mkdir "$d/tl";

# The client, built offline from the Debian package's sources.
my $build = do {
    local $ENV{GO111MODULE} = 'off';
    local $ENV{GOPATH} = $gopath;
    local $ENV{GOCACHE} = "$d/gocache";
    local $ENV{GOFLAGS} = '';
    local $ENV{HOME} = $d;
    run_cmd(['go', 'build', '-o', "$d/tlogcheck", "$SKTest::ROOT/t/go/tlogcheck/main.go"]);
};
is($build->{rc}, 0, 'tlogcheck builds') or BAIL_OUT($build->{err});

my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my $sk = ed25519_key($d, 'sk');
my $crt = issue($d, $ca, $sk, 'example.com', "$d/example");

# tl_client posts hundreds of appends from one address: no per-client
# rate limit.
my $t = start_timeline("$d/tl", operator_key => "$d/operator.pub",
    chunk_interval => 3600, rate_per_client => 0);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
my $head0 = slurp("$d/tl/signed-head");     # tree size 0

sub tl { return run_cmd([$SKTimeline::TL, @_, '-c', "$d/tl/tl.conf"]) }
sub checkpoint {
    my ($name) = @_;
    my $r = http('GET', "$t->{url}/checkpoint");
    is($r->{code}, 200, "GET /checkpoint ($name)");
    spew("$d/$name", $r->{body});
    return (split /\n/, $r->{body})[1];
}
sub tlogcheck {
    my ($old, $new, $what) = @_;
    my $r = run_cmd(["$d/tlogcheck", $t->{url}, "$d/tl/timeline.pub",
        "$d/$old", "$d/$new"]);
    like($r->{out}, qr/^ok \d+ entries, consistent with size \d+/,
        "Go tlog: $what") or diag($r->{out}, $r->{err});
}
sub headers {
    my ($path) = @_;
    my $r = run_cmd(['curl', '-s', '-o', '/dev/null', '-D', '-', '-w',
        '%{http_code}', "$t->{url}/$path"]);
    return $r->{out};
}

# Past two full level-0 tiles, with a partial level-1 tile: RSA-2048
# chains, one EE per name, as tests/bench/tl_client posts them, one client
# at a time so that each append is a batch of its own, ended by its
# Map-Root entry: 300 appends, 600 entries.
for my $c (['genpkey', '-algorithm', 'rsa', '-pkeyopt', 'rsa_keygen_bits:2048',
            '-out', "$d/root.key"],
           ['req', '-x509', '-key', "$d/root.key", '-out', "$d/root.crt",
            '-days', 30, '-subj', '/CN=tiles-root', '-addext',
            'basicConstraints=critical,CA:TRUE', '-addext',
            'keyUsage=critical,keyCertSign,cRLSign'],
           ['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout',
            "$d/inter.key", '-out', "$d/inter.csr", '-subj', '/CN=tiles-inter']) {
    SKTimeline::ossl(@$c);
}
spew("$d/inter.ext", "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n");
SKTimeline::ossl('x509', '-req', '-in', "$d/inter.csr", '-CA', "$d/root.crt",
    '-CAkey', "$d/root.key", '-CAcreateserial', '-days', 30, '-sha256',
    '-extfile', "$d/inter.ext", '-out', "$d/inter.crt");
my $r = run_cmd([$client, '127.0.0.1', $t->{port}, "$d/operator.key", $sk,
    "$d/root.crt", "$d/inter.crt", "$d/inter.key", 299, 1]);
like($r->{out}, qr/^appends /m, "300 appends") or diag($r->{out}, $r->{err}, slurp($t->{log}));
is(checkpoint('cp1'), 600, 'a first checkpoint at size 600');
is(append($t, root_entry(cert => "$ca.crt", key => $op, serial => 2))->{code},
    201, 'a root');
is(append($t, bind_entry(name => 'example.com', key => $sk,
    chain => [$crt, "$ca.crt"]))->{code}, 201, 'a bind');
is(checkpoint('cp2'), 604, 'a second checkpoint at size 604');
tlogcheck('cp1', 'cp2', 'every entry proved, 600 -> 604 consistent');
my $last = http('GET', "$t->{url}/entry/603")->{body};
like($last, qr/\AMap-Root: 1\n/, 'the checkpoint\'s last entry is a Map-Root '
    . 'entry, proved like any other');

# Caching: full tiles and bundles forever, partial ones briefly.
like(headers('tile/0/000'), qr/^Cache-Control: public, max-age=31536000, immutable\r$/mi,
    'a full tile is immutable');
like(headers('tile/entries/001'), qr/^Cache-Control: public, max-age=31536000, immutable\r$/mi,
    'a full entry bundle is immutable');
my $h = headers('tile/0/002.p/92');
like($h, qr/^Cache-Control: public, max-age=5\r$/mi, 'a partial tile is cached briefly');
like($h, qr/^Content-Length: 2944\r$/mi, '... 92 hashes');
like(headers('tile/1/000.p/2'), qr/200$/, 'the partial level-1 tile');
like(headers('tile/0/000.p/7'), qr/200$/, 'a narrower view of a full tile');
like(headers("tile/$_"), qr/404$/, "tile/$_: 404")
    for qw(0/002.p/93 0/002 0/003 entries/002.p/93 1/000 2/000.p/1 8/000
           0/02 0/x000/001 0/002.p/091 0/000.p/256 ../signed-head);
my $e0 = http('GET', "$t->{url}/entry/0")->{body};
my $b0 = run_cmd(['curl', '-s', "$t->{url}/tile/entries/000.p/1"])->{out};
is($b0, pack('n', length $e0) . $e0, 'bundle: a uint16 length, then /entry/0');

# A restart reads the tiles: only the right edge (92 leaves) is hashed.
stop_daemon($t->{pid});
ok(-s "$d/tl/tile/0/000" == 8192 && -s "$d/tl/tile/0/001" == 8192
    && !-e "$d/tl/tile/0/002" && !-e "$d/tl/tile/1/000",
    'on disk: the full tiles only');
my $mark = -s $t->{log};
restart_timeline($t);
ok($t->{up}, 'restarts over its tiles');
unlike(substr(slurp($t->{log}), $mark), qr/rebuil|no tiles/, '... quietly');
is(checkpoint('cp3'), 604, '... same size');
tlogcheck('cp1', 'cp3', 'after a restart');

# A damaged tile under the right edge: the root is not the signed one,
# the tiles are rebuilt from the log, and all is well again.
stop_daemon($t->{pid});
sub flip {
    my ($f) = @_;
    open my $fh, '+<', $f or die "$f: $!";
    sysseek($fh, 100, 0); sysread($fh, my $c, 1);
    sysseek($fh, 100, 0); syswrite($fh, chr(ord($c) ^ 1));
    close $fh;
}
flip("$d/tl/tile/0/000");
$r = tl('--check');
is($r->{rc}, 1, '--check: a damaged tile is a problem');
like($r->{out}, qr{tile/0/000: not the hashes the log's entries give \(sk-timeline --repair rebuilds the tiles\)},
    '... named') or diag($r->{out});
$mark = -s $t->{log};
restart_timeline($t);
ok($t->{up}, 'starts with a damaged tile');
like(substr(slurp($t->{log}), $mark),
    qr/are not those signed.*rebuilding \S+tile from the log to tell whether the tiles or the log are damaged/,
    '... rebuilding the tiles from the log');
is(checkpoint('cp4'), 604, '... same size');
tlogcheck('cp1', 'cp4', 'after a damaged tile');

# A missing one: rebuilt as the right edge is read.
stop_daemon($t->{pid});
unlink "$d/tl/tile/0/001";
$mark = -s $t->{log};
restart_timeline($t);
ok($t->{up}, 'starts with a missing tile');
like(substr(slurp($t->{log}), $mark), qr{tile/0/001: missing; rebuilt it from the log},
    '... rebuilt');
ok(-s "$d/tl/tile/0/001" == 8192, '... on disk again');
tlogcheck('cp1', 'cp4', 'after a missing tile');

# Entries past signed-head (a crash between the log's sync and the head's
# write; here the head of size 0 put back): the tiles are trusted only up
# to the signed size, the rest hashed again, so a damaged tile there does
# not get into the root signed next.
stop_daemon($t->{pid});
spew("$d/tl/signed-head", $head0);
flip("$d/tl/tile/0/000");
restart_timeline($t);
ok($t->{up}, 'starts with entries past signed-head and a damaged tile');
is(checkpoint('cp4b'), 604, '... signs them all again');
tlogcheck('cp1', 'cp4b', '... with the right root');

# --repair rebuilds every tile; --check then passes.
stop_daemon($t->{pid});
flip("$d/tl/tile/0/001");
$r = tl('--repair');
is($r->{rc}, 0, '--repair') or diag($r->{out}, $r->{err});
$r = tl('--check');
is($r->{rc}, 0, '--check after --repair') or diag($r->{out}, $r->{err});

# No tiles at all (a data_dir from before them): built at start.
system('rm', '-rf', "$d/tl/tile");
like(tl('--check')->{out}, qr/no tiles yet/, '--check: no tiles yet is no problem');
$mark = -s $t->{log};
restart_timeline($t);
ok($t->{up}, 'starts without tiles');
like(substr(slurp($t->{log}), $mark), qr/no tiles yet: building them from 604 entries/,
    '... and builds them');
tlogcheck('cp1', 'cp4', 'tiles built at start');

# Appends after all that go on from the right edge.
my $crt2 = issue($d, $ca, $sk, 'example.org', "$d/example2");
is(append($t, bind_entry(name => 'example.org', key => $sk,
    chain => [$crt2, "$ca.crt"]))->{code}, 201, 'one more entry');
is(checkpoint('cp5'), 606, '... size 606 (with its Map-Root entry)');
tlogcheck('cp2', 'cp5', '604 -> 606');

# The origin: a schema-less URL (c2sp.org/tlog-checkpoint), also the
# signed-note key name the Go client verifies with.
stop_daemon($t->{pid});
$t->{conf}{origin} = 'https://tl.example/sk/7';
SKTimeline::write_conf($t);
$r = tl('--check');
isnt($r->{rc}, 0, 'an origin with a scheme is refused');
like($r->{out} . $r->{err}, qr/"origin": a schema-less URL, without "https:\/\/"/,
    '... saying so') or diag($r->{out}, $r->{err});
$t->{conf}{origin} = 'tl.example/sk/7';
restart_timeline($t);
ok($t->{up}, 'starts with origin tl.example/sk/7');
checkpoint('cp6');
like(slurp("$d/cp6"), qr{\Atl\.example/sk/7\n606\n.*\n\n\x{e2}\x{80}\x{94} tl\.example/sk/7 }s,
    '... the checkpoint names it, signed under it');
tlogcheck('cp6', 'cp6', 'with a URL origin');

# sk-mirror keeps its copy's tree in tiles too: the same tiles as the
# timeline's; a damaged one is rebuilt from the copy at start.
my $m = start_mirror("$d/m", [[7, $t->{url}, "$d/tl/timeline.pub",
    'tl.example/sk/7']]);
ok($m->{up}, 'sk-mirror listens') or diag(slurp($m->{log}));
sub copied {
    my $s = mirror_status($m) or return 0;
    return $s->{timelines}[0]{entries} == 606
        && $s->{timelines}[0]{checkpoint_size} == 606;
}
ok(wait_until(\&copied, 60), 'the mirror copies all 606 entries')
    or diag(slurp($m->{log}));
stop_daemon($m->{pid});
my $mt = "$d/m/data/tl-7/tile";
is(slurp("$mt/0/001"), slurp("$d/tl/tile/0/001"), "the mirror's tile 0/001 is the timeline's");
ok(!-e "$mt/0/002", '... and no partial tile is on disk');
flip("$mt/0/000");
$mark = -s $m->{log};
restart_mirror($m);
ok($m->{up}, 'the mirror restarts with a damaged tile');
like(substr(slurp($m->{log}), $mark),
    qr{\S+/tile: the root of 606 entries is not the index's; rebuilding the tiles from the index},
    '... rebuilding its tiles from the index of the copy');
ok(wait_until(\&copied, 20), '... and serves the copy');
is(slurp("$mt/0/000"), slurp("$d/tl/tile/0/000"), '... tile 0/000 mended');
stop_daemon($m->{pid});

stop_daemon($t->{pid});
done_testing();
