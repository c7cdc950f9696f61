#!/usr/bin/perl
# sk-timeline's name map (data_dir/index/data.mdb, tables map.leaf and
# map.node: LMDB keeps no checksums) with bytes of its rows changed while
# the daemon is stopped: nothing is decided from them, and no Map-Root
# entry signs a root built on them.
#  1. a name's key (its map.leaf row): a second Bind of the name is
#     refused (403), not taken;
#  2. a name's value (the hash chain of its map.leaf row): the owner's
#     Change-Services, signed by the SK in force, is taken (201);
#  3. a node hash (the name's leaf hash, held by its parent's map.node
#     row): the same;
#  4. the stored root (the space's record in map.node): found at start,
#     logged naming the file, the index and map rebuilt from the log.
# In 1-3 the damage is found on the name's path from the root the last
# Map-Root entry signed, logged naming the file, the table and the row,
# the index and map rebuilt from the log while serving, the append
# answered 503 with Retry-After meanwhile.  Each time, every Map-Root entry
# of the log is the map recomputed from the log's entries (map_replay).
# The bytes are found by content, every copy in the file (LMDB may keep
# older pages).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Digest::SHA qw(sha256);
use MIME::Base64 qw(decode_base64);
use SKTest;
use SKTimeline;
use SKFault;

my $REPLAY = "$FindBin::Bin/../../" . ($ENV{BUILD} // 'build')
    . '/tests/map_replay';
plan skip_all => 'sk-timeline or map_replay not built'
    unless -x $SKTimeline::TL && -x $REPLAY;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my %key = map { $_ => ed25519_key($d, $_) } qw(victim owner other);
my %crt = map { $_ => issue($d, $ca, $key{$_}, "$_.example", "$d/$_") }
    qw(victim owner other);
my $bind = sub {
    my ($n) = @_;
    return bind_entry(name => "$n.example", key => $key{$n},
        chain => [$crt{$n}]);
};
my $mdb = "$d/index/data.mdb";

my $t = start_timeline($d, operator_key => "$d/operator.pub",
    chunk_interval => 3600);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'the CA trusted');
is(append($t, $bind->($_))->{code}, 201, "$_.example bound")
    for qw(victim owner other);
stop_daemon($t->{pid});

# Every Map-Root entry of the log against the map recomputed from it.
sub replay_agrees {
    stop_daemon($t->{pid});
    spew("$d/log.replay", read_log($d));
    my $r = run_cmd(['sh', '-c', "exec '$REPLAY' <'$d/log.replay'"]);
    is($r->{rc}, 0, 'every Map-Root entry signs the map of the log')
        or diag($r->{out}, $r->{err});
}

# The map's values as the log gives them: key, then value hash.
sub map_key { return sha256($_[0]) }
sub history {
    my ($name) = @_;
    my @e = grep { /^Name: \Q$name\E$/m } parse_entries(read_log($d));
    my $chain = "\0" x 32;
    $chain = sha256("\x13" . $chain . leaf_hash($_)) for @e;
    my ($sn) = $e[-1] =~ /^SN: (\d+)$/m;
    return ($chain, sha256("\x12" . pack('Q>Q>', scalar @e, $sn) . $chain));
}

# ---- 1. a name's key ----
cmp_ok(damage($mdb, map_key('victim.example'), 9), '>', 0,
    'the map key of victim.example changed');
my $said = restart_logged($t);
append_after_rebuild($t, 'a second Bind of victim.example', $bind->('victim'),
    403, qr/already has a Bind/);
like($said->(), qr{index damaged: \S+/index/data\.mdb: name map, victim\.example: map\.(leaf|node) row \(space 0, depth \d+\)},
    'the damage logged, naming the file, table and row') or diag($said->());
like($said->(), qr{/index: rebuilt from the log: \d+ entries}, '... rebuilt');
replay_agrees();

# ---- 2. a name's value ----
my ($chain) = history('owner.example');
cmp_ok(damage($mdb, $chain, 3), '>', 0, 'the hash chain of owner.example changed');
$said = restart_logged($t);
append_after_rebuild($t, "the owner's Change-Services", cs_entry(
    name => 'owner.example', services => 'https:443', key => $key{owner}),
    201, qr/^Name: owner\.example$/m);
like($said->(), qr{index damaged: \S+/index/data\.mdb: name map, owner\.example: map\.leaf row \(space 0, depth \d+\): its key and value do not give the hash above it},
    'the damage logged') or diag($said->());
replay_agrees();

# ---- 3. a node hash: the name's leaf hash in its parent's row ----
my (undef, $value) = history('owner.example');
my $leaf = sha256("\x10" . map_key('owner.example') . $value);
cmp_ok(damage($mdb, $leaf, 17), '>', 0,
    'the leaf hash of owner.example in its parent map.node row changed');
$said = restart_logged($t);
append_after_rebuild($t, "the owner's next Change-Services", cs_entry(
    name => 'owner.example', services => 'https:8443', key => $key{owner}),
    201, qr/^Services: https:8443$/m);
like($said->(), qr{index damaged: \S+/index/data\.mdb: name map, owner\.example: map\.(node|leaf) row \(space 0, depth \d+\)},
    'the damage logged') or diag($said->());
is(append($t, $bind->('owner'))->{code}, 403,
    'a second Bind of owner.example: 403');
replay_agrees();

# ---- 4. the stored root ----
my ($hash) = (parse_entries(read_log($d)))[-1] =~ /^Map-Hash: (\S+)$/m;
my $root = decode_base64(($hash =~ tr{-_}{+/}r) . '=');
cmp_ok(damage($mdb, $root, 0), '>', 0, 'the stored root changed');
$said = restart_logged($t);
like($said->(), qr{\S+/index/data\.mdb: the stored name map: SN \d+ of \S+entries\.log is a Map-Root entry with Map-Hash \S+, but the map gives \S+; rebuilding it from the log},
    'found at start, logged naming the file, rebuilt') or diag($said->());
is(append($t, $bind->('victim'))->{code}, 403,
    'a second Bind of victim.example: 403');
is(append($t, cs_entry(name => 'other.example', services => 'smtps',
    key => $key{other}))->{code}, 201, "other.example's Change-Services: 201");
replay_agrees();
unlike(slurp($t->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');

done_testing();
