#!/usr/bin/perl
# sk-timeline's index (data_dir/index/data.mdb, LMDB: no checksums) with
# bytes of its rows changed while the daemon is stopped: no row decides an
# append or an answer unchecked.
#  1. a name's key (the names table): the name looked up is "not found",
#     yet a second Bind of it is refused, not taken (201);
#  2. a name's stored SK: the owner's own Change-Services is taken;
#  3. an entry's offset and another's leaf hash (the entries table):
#     /entry/<sn> and /tile/entries/000 answer the log's bytes, not 500;
#  4. the last entry's stamp (it orders the next entry, /status shows it);
#  5. where a copy of another timeline's entry lies (the copies table):
#     /incorporated/<sn> answers the copy, not other bytes;
#  6. the trusted root's public key (the roots table): a Bind it issued
#     for is taken, not refused;
#  7. a Name in entries.log changed too, its mtime kept: the rebuild
#     gives a map other than the last Map-Root entry signs: logged naming
#     the index and the log, appends refused.
# Each time the damage is found at read and logged naming the file and
# the row, the index is rebuilt from the log while serving, and an append
# meanwhile gets 503 with Retry-After; --check passes afterwards.  The
# bytes are found by content (the name, the SK's base64url, the leaf
# hash), every copy in the file, as LMDB may keep older pages.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Digest::SHA qw(sha256);
use SKTest;
use SKTimeline;
use SKFault;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my %key = map { $_ => ed25519_key($d, $_) }
    qw(victim owner late peer bulk);
my %crt = map { $_ => issue($d, $ca, $key{$_}, "$_.example", "$d/$_") }
    qw(victim owner late peer);
my $bind = sub {
    my ($n) = @_;
    return bind_entry(name => "$n.example", key => $key{$n},
        chain => [$crt{$n}]);
};
my $mdb = "$d/index/data.mdb";

my $CLIENT = "$FindBin::Bin/../../" . ($ENV{BUILD} // 'build')
    . '/bench/tl_client';
plan skip_all => "no $CLIENT" unless -x $CLIENT;
my $inter = make_intermediate($d, $ca, 'inter');
my $t = start_timeline($d, operator_key => "$d/operator.pub",
    chunk_interval => 3600, rate_per_client => 0);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
# The root and 256 Binds, fast (the bench's client): a full tile, whose
# entries are read through the index.
my $r = do {
    local $ENV{ASAN_OPTIONS} = 'detect_leaks=0';    # the client's own
    run_cmd([$CLIENT, '127.0.0.1', $t->{port}, $op, $key{bulk}, "$ca.crt",
        "$inter.crt", "$inter.key", 256, 8]);
};
is($r->{rc}, 0, 'the root and 256 Binds') or diag("$r->{out}$r->{err}");
is(append($t, $bind->($_))->{code}, 201, "$_.example bound")
    for qw(victim owner);
my %before = (entry => http('GET', "$t->{url}/entry/100")->{body},
    tile => http('GET', "$t->{url}/tile/entries/000")->{body});
is(length($before{tile}) > 256 * 100, 1, 'the full entry tile is served');
stop_daemon($t->{pid});

sub check_passes {
    stop_daemon($t->{pid});
    my $r = run_cmd([$SKTimeline::TL, '--check', '-c', "$d/tl.conf"]);
    is($r->{rc}, 0, '--check passes on the rebuilt index') or diag($r->{out});
}

# ---- 1. a name's key ----
cmp_ok(damage($mdb, 'victim.example', 0), '>', 0, 'the key victim.example changed');
my $said = restart_logged($t);
append_after_rebuild($t, 'a second Bind of victim.example', $bind->('victim'),
    403, qr/already has a Bind/);
like($said->(), qr{index damaged: \S+/index/data\.mdb: tables names and seen, bucket [0-9a-f]{4} \(of victim\.example\): its rows do not sum},
    'the damage logged, naming the file, table and rows');
like($said->(), qr{/index: rebuilt from the log: \d+ entries}, '... rebuilt');
check_passes();

# ---- 2. the stored SK ----
cmp_ok(damage($mdb, spki_b64($key{owner}), 20), '>', 0,
    'the SK stored for owner.example changed');
$said = restart_logged($t);
append_after_rebuild($t, "the owner's Change-Services", cs_entry(
    name => 'owner.example', services => 'https:443', key => $key{owner}),
    201, qr/^Name: owner\.example$/m);
like($said->(), qr{index damaged: .*\(of owner\.example\): its rows do not sum},
    'the damage logged');
check_passes();

# ---- 3. an entry's offset, another's leaf ----
# Each row holds its entry's leaf hash: found by it.
my @log = parse_entries(read_log($d));
my @leaf = map { leaf_hash($_) } @log[100, 120, $#log];
is(leaf_hash($before{entry}), $leaf[0], 'the leaf hash of SN 100');
my ($max_ts) = $log[-1] =~ /^Timestamp: (\d+)$/m;
# Row: offset (8 bytes), stamp (8), leaf (32): the offset's low byte.
cmp_ok(damage($mdb, $leaf[0], -9), '>', 0, 'the offset of SN 100 changed');
cmp_ok(damage($mdb, $leaf[1], 5), '>', 0, 'the leaf hash of SN 120 changed');
$said = restart_logged($t);
$r = http('GET', "$t->{url}/entry/100");
is($r->{code}, 200, '/entry/100: 200');
is($r->{body}, $before{entry}, '... the entry the log holds');
like($said->(), qr{index damaged: \S+/index/data\.mdb: table entries, SN 100 to 101: offsets \d+ to \d+ of \S+entries\.log do not hold},
    'the damage logged, naming the file, table and row');
$r = http('GET', "$t->{url}/tile/entries/000");
is($r->{code}, 200, '/tile/entries/000: 200');
ok($r->{body} eq $before{tile}, '... the entries the log holds');
is(append($t, $bind->('victim'))->{code}, 403,
    'a second Bind after it: still 403');
check_passes();

# ---- 4. the last entry's stamp, which orders the next ----
cmp_ok(damage($mdb, pack('Q>', $max_ts) . $leaf[2], 7), '>', 0,
    'the stamp of the last SN changed');
$said = restart_logged($t);
like($said->(), qr{index: SN $#log in \S+entries\.log is not the entry it indexed; rebuilding it from the log},
    'found at start, logged, rebuilt');
like(http('GET', "$t->{url}/status")->{body}, qr/^Max-Timestamp: $max_ts$/m,
    '/status: the last entry\'s own stamp');
check_passes();

# ---- 5. a copy's place in incorporated.log ----
mkdir "$d/p";
my $p = start_timeline("$d/p", tid => 9, operator_key => "$d/operator.pub");
ok($p->{up}, 'a peer timeline listens') or diag(slurp($p->{log}));
is(append($p, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    '... trusting the CA');
my $copy = append($p, $bind->('peer'))->{body};
stop_daemon($p->{pid});
$t->{conf}{peer} = "9 $d/p/timeline.pub";
restart_timeline($t);
$r = append($t, incorporate_entry($copy), $copy);
is($r->{code}, 201, 'the peer\'s Bind incorporated') or diag($r->{body});
my ($isn) = $r->{body} =~ /^SN: (\d+)$/m;
stop_daemon($t->{pid});
# Row: SHA-256 of the copy (the key), then its offset (8 bytes).
cmp_ok(damage($mdb, sha256($copy), 32 + 7), '>', 0, 'the offset of the copy changed');
$said = restart_logged($t);
$r = http('GET', "$t->{url}/incorporated/$isn");
is($r->{code}, 200, "/incorporated/$isn: 200");
ok($r->{body} eq $copy, '... the copy kept');
like($said->(), qr{index damaged: \S+/index/data\.mdb: table copies: offset \d+, \d+ bytes},
    'the damage logged, naming the file and table');
check_passes();

# ---- 6. the root's public key ----
my $spki = SKTimeline::ossl('x509', '-in', "$ca.crt", '-noout', '-pubkey');
spew("$d/ca.pub", $spki);
$spki = SKTimeline::ossl('pkey', '-pubin', '-in', "$d/ca.pub", '-outform',
    'DER');
cmp_ok(damage($mdb, $spki, length($spki) - 5), '>', 0,
    'the public key of the trusted root changed');
$said = restart_logged($t);
like($said->(), qr{\S+/index/data\.mdb: table roots: a row whose DER does not hash to its key; rebuilding it from the log},
    'found at start, logged, rebuilt');
$r = append($t, $bind->('late'));
is($r->{code}, 201, 'a Bind under that root: 201') or diag($r->{body});
check_passes();

# ---- 7. a rebuild while serving that does not give the signed map ----
# A Name in the log's first full tile changed as a disk's would (the
# file's mtime kept: a start reads back only the entries past the last
# full tile), under a damaged names row: the rebuild that damage sets off
# gives a name map other than the one the last Map-Root entry signs, so
# appends are refused, neither decided from it nor sealed under it.
my ($name) = map { /^Name: (\S+)$/m ? $1 : () } @log[1 .. 200];
run_cmd(['touch', '-r', "$d/entries.log", "$d/log.time"]);
cmp_ok(damage("$d/entries.log", "Name: $name\n", sub { my ($data, $at) = @_;
    substr($$data, $at + 6, 1) =~ tr/a-z0-9/b-z0-9a/ }), '==', 1,
    "the Name $name changed in entries.log");
run_cmd(['touch', '-r', "$d/log.time", "$d/entries.log"]);
cmp_ok(damage($mdb, spki_b64($key{owner}), 20), '>', 0,
    'the SK stored for owner.example changed');
$said = restart_logged($t);
my $cs = cs_entry(name => 'owner.example', services => 'imaps',
    key => $key{owner});
my @codes = map { append($t, $cs)->{code} } 1, 2;
ok(!grep({ $_ == 201 } @codes), 'the append refused, not taken') or diag("@codes");
like($said->(), qr{/data\.mdb: the name map rebuilt from the log: SN \d+ of \S+entries\.log is a Map-Root entry with Map-Hash \S+, but the map gives},
    'logged, naming the index and the log') or diag($said->());
stop_daemon($t->{pid});
my $from = -s $t->{log};
restart_timeline($t);
ok(!$t->{up}, 'a restart refuses to start');
like(substr(slurp($t->{log}), $from), qr{the name map built from the log: SN \d+ of \S+entries\.log is a Map-Root entry with Map-Hash \S+, but the map gives},
    '... naming entries.log');

unlike(slurp($p->{log}) . slurp($t->{log}), qr/Sanitizer|runtime error/,
    'no sanitizer reports');
done_testing();
