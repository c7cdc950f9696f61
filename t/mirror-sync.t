#!/usr/bin/perl
# sk-mirror against three real sk-timelines: bootstrap from their
# tlog-tiles entry bundles (t/mirror-tiles.t has the chunk fallback); registrations on each timeline appear in signed answers
# (every signature and inclusion proof checked here with openssl and the
# RFC 6962 model, not libsk); a signed "no entries" answer; a new entry
# voids the cached answer at once; no answers with fewer than two healthy
# timelines; a restart reads the index back (entries past it are checked),
# a damaged entry is never served, and a damaged copy stops a start that
# has to index it.

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
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(example a b c heir r r2);
my %dns = (example => 'example.com', r2 => 'r.example');
my %crt = map { $_ => issue($d, $ca, $sk{$_}, $dns{$_} // "$_.example",
    "$d/$_") } keys %sk;

my (%t, %keys);
for my $tid (7, 8, 9) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 1);
    ok($t{$tid}{up}, "timeline $tid listens") or BAIL_OUT(slurp($t{$tid}{log}));
    $keys{$tid} = ["$d/tl$tid/timeline.pub", "sk-timeline-$tid"];
}

sub reg {
    my ($tid, $entry, $what) = @_;
    my $r = append($t{$tid}, $entry);
    is($r->{code}, 201, "timeline $tid: $what") or diag($r->{body});
}

# Each append is a sequencing batch, which the timeline ends with a
# Map-Root entry: the n-th entry appended (from 0) is SN 2n.
for my $tid (7, 8, 9) {
    reg($tid, root_entry(cert => "$ca.crt", key => $op), 'trusts the CA');
    reg($tid, bind_entry(name => 'example.com', key => $sk{example},
        chain => [$crt{example}]), 'Bind example.com');
}
reg(7, bind_entry(name => 'a.example', key => $sk{a}, chain => [$crt{a}]),
    'Bind a.example');
reg(8, bind_entry(name => 'b.example', key => $sk{b}, chain => [$crt{b}]),
    'Bind b.example');
reg(9, bind_entry(name => 'c.example', key => $sk{c}, chain => [$crt{c}]),
    'Bind c.example');
# A whole Rebind story on one timeline: the mirror's per-name rules
# (bound, signed by the SK in force, listed rebinder) must accept it.
reg(9, bind_entry(name => 'heir.example', key => $sk{heir},
    chain => [$crt{heir}]), 'Bind heir.example');
reg(9, bind_entry(name => 'r.example', key => $sk{r}, chain => [$crt{r}],
    rebinders => 'heir.example'), 'Bind r.example, heir.example may rebind');
reg(9, unbind_entry(name => 'r.example', key => $sk{r}), 'Unbind r.example');
reg(9, rebind_entry(name => 'r.example', key => $sk{r2}, chain => [$crt{r2}],
    rebinder => 'heir.example', rebinder_key => $sk{heir}),
    'Rebind r.example by heir.example');
reg(9, cs_entry(name => 'r.example', services => 'smtps', key => $sk{r2}),
    'Change-Services by the new SK');

# The configuration: checked by -n, errors name the file and line.
mkdir "$d/m";
spew("$d/m/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d/m\n"
    . "timeline = 7 $t{7}{url} $keys{7}[0]\nlisten = 127.0.0.1:2\n");
my $r = run_cmd([$SKMirror::MR, '-n', '-c', "$d/m/bad.conf"]);
is($r->{rc}, 78, 'sk-mirror -n: a duplicate key is a configuration error');
like($r->{err}, qr/bad\.conf: line 4: "listen" is duplicate/,
    '... naming the file and line');
spew("$d/m/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d/m\n"
    . "timeline = 7 ftp://x $keys{7}[0]\n");
like(run_cmd([$SKMirror::MR, '-n', '-c', "$d/m/bad.conf"])->{err},
    qr/line 3: "timeline": URL "ftp:\/\/x" is not http/, 'a bad timeline URL');
spew("$d/m/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d/m\n"
    . "timeline = 7 http:// $keys{7}[0]\n");
like(run_cmd([$SKMirror::MR, '-n', '-c', "$d/m/bad.conf"])->{err},
    qr{line 3: "timeline": URL "http://" has no host}, 'a URL without a host');
spew("$d/m/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d/m\n"
    . "timeline = 7 $t{7}{url} $keys{7}[0]\npeer = https://\n");
like(run_cmd([$SKMirror::MR, '-n', '-c', "$d/m/bad.conf"])->{err},
    qr{line 4: "peer": URL "https://" has no host}, '... as a peer');
spew("$d/m/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d/m\n"
    . "timeline = 7 $t{7}{url} $keys{7}[0]\npeer = http://m2.test/\n"
    . "peer = http://m2.test\n");
like(run_cmd([$SKMirror::MR, '-n', '-c', "$d/m/bad.conf"])->{err},
    qr{line 5: "peer": http://m2\.test given twice}, 'a peer given twice');
spew("$d/m/bad.conf", "listen = 127.0.0.1\ndata_dir = $d/m\n"
    . "timeline = 7 $t{7}{url} $keys{7}[0]\n");
$r = run_cmd([$SKMirror::MR, '-n', '-c', "$d/m/bad.conf"]);
is($r->{rc}, 78, 'a listen address without a port: a configuration error');
like($r->{err}, qr/listen "127\.0\.0\.1": want ADDRESS:PORT/, '... naming it');

# Before anything is published, the mirror starts from nothing.
my $m = start_mirror("$d/m", [map { [$_, $t{$_}{url}, @{$keys{$_}}] }
    7, 8, 9]);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { 3 == grep { tl_state($m, $_) eq 'Idle' } 7, 8, 9 }, 15),
    'all three timelines Idle') or diag(slurp($m->{log}));

sub answer {
    my ($name, $since) = @_;
    my $r = query($m, $name, $since);
    return { code => $r->{code}, a => check_answer($r->{body}, $m->{pub},
        \%keys, $name), body => $r->{body} };
}

sub sns {
    my ($a, $tid) = @_;
    return join ',', map { $_->{sn} } @{$a->{timelines}{$tid}{entries}};
}

my $q = answer('example.com');
is($q->{code}, 200, 'query example.com: 200');
ok($q->{a}{ok}, 'answer: mirror signature, checkpoints, entries and proofs '
    . 'all verify') or diag($q->{a}{err});
is($q->{a}{name}, 'example.com', 'answer names the name');
is(join(' ', map { "$_:" . sns($q->{a}, $_) } 7, 8, 9), '7:2 8:2 9:2',
    'the Bind from each of the three timelines');
is($q->{a}{hash}, 'e3b0c442', 'Reneged-Hash of an empty list');
is($q->{a}{timelines}{7}{state}, 'Idle', 'each timeline with its state');

$q = answer('a.example');
ok($q->{a}{ok}, 'a.example: answer verifies') or diag($q->{a}{err});
is(join(' ', map { "$_:" . sns($q->{a}, $_) } 7, 8, 9), '7:4 8: 9:',
    'a.example only from timeline 7');
$q = answer('c.example');
is(sns($q->{a}, 9), '4', 'c.example from timeline 9');

$q = answer('r.example');
ok($q->{a}{ok}, 'r.example: answer verifies') or diag($q->{a}{err});
is(sns($q->{a}, 9), '8,10,12,14', 'Bind, Unbind, Rebind, Change-Services: all '
    . 'merged, none held against the timeline');

$q = answer('nobody.example');
is($q->{code}, 200, 'unknown name: 200');
ok($q->{a}{ok}, 'signed "no entries" answer verifies') or diag($q->{a}{err});
is(join('', map { sns($q->{a}, $_) } 7, 8, 9), '', '... with no entries');
ok(defined $q->{a}{timelines}{8}{size}, '... and every checkpoint');

is(query($m, 'Not..A.Name')->{code}, 400, 'malformed name: 400');
is(query($m, 'example.com', 'x')->{code}, 400, 'malformed since: 400');
is(http('GET', "$m->{url}/nothing")->{code}, 404, 'unknown path: 404');

# Cached, then voided by a new entry for the name.
my $first = query($m, 'example.com')->{body};
is(query($m, 'example.com')->{body}, $first, 'the same answer again: cached');
ok(mirror_status($m)->{cache}{hits} >= 1, 'status counts cache hits');
reg(8, cs_entry(name => 'example.com', services => 'https,smtps',
    key => $sk{example}), 'Change-Services example.com');
ok(wait_until(sub { sns(answer('example.com')->{a}, 8) eq '2,6' }, 10),
    'the new entry is in the next answer at once (cache voided)');
reg(7, unbind_entry(name => 'a.example', key => $sk{a}), 'Unbind a.example');
ok(wait_until(sub { sns(answer('a.example')->{a}, 7) eq '4,6' }, 10),
    'the Unbind reaches answers within a sync');

# The timelines keep name maps: an answer lists a name's whole history
# whatever since says (a history with a hole could not be checked).
$q = answer('example.com', 2000000000);
ok($q->{a}{ok} && sns($q->{a}, 8) eq '2,6',
    'since after every entry: the whole history all the same');
is($q->{a}{timelines}{8}{map}, 'present', '... proven by the map');

my $st = mirror_status($m);
is(scalar @{$st->{timelines}}, 3, 'status lists three timelines');
is($st->{timelines}[1]{tid}, 8, '... by TID');
ok($st->{serving}, '... and says it serves');

# Fewer than two healthy timelines: no answers.
stop_daemon($t{8}{pid});
stop_daemon($t{9}{pid});
ok(wait_state($m, 8, 'Stuck') && wait_state($m, 9, 'Stuck'),
    'timelines 8 and 9 stopped: Stuck');
$r = query($m, 'example.com');
is($r->{code}, 503, 'one healthy timeline: 503');
like($r->{body}, qr/^query: 1 of 3 timelines are servable/, '... saying why');
restart_timeline($t{8});
ok(wait_state($m, 8, 'Idle', 10), 'timeline 8 back: Idle');
$q = answer('example.com');
is($q->{code}, 200, 'two healthy timelines: answers again');
is($q->{a}{timelines}{9}{state}, 'Stuck', '... listing 9 as Stuck');
is(sns($q->{a}, 9), '2', '... served from its last checked state');
ok(defined $q->{a}{timelines}{9}{age}, '... with its checkpoint\'s age');
restart_timeline($t{9});
ok(wait_state($m, 9, 'Idle', 10), 'timeline 9 back: Idle');

# Restart: the index and the copies are read back.
stop_daemon($m->{pid});
restart_mirror($m);
ok($m->{up}, 'mirror restarts');
like(slurp($m->{log}), qr/timeline 7: 8 entries, checkpoint of 8/,
    'the copy of timeline 7 read back');
ok(-d "$d/m/data/tl-7/tile", '... its tree kept in tl-7/tile/');
ok(wait_until(sub { sns(answer('example.com')->{a}, 8) eq '2,6' }, 10),
    'same answers after the restart');

stop_daemon($m->{pid});
my $log = "$d/m/data/tl-8/entries";
my $data = slurp($log);
$data =~ s/^(Name: example\.co)m$/${1}n/m;
spew($log, $data);
# Indexed entries are not checked again at start, but every read of one
# is checked against its indexed leaf: the damaged entry is never served.
restart_mirror($m);
ok($m->{up}, 'a damage inside the indexed part: the mirror starts');
ok(wait_state($m, 8, 'Idle', 10), '... timeline 8 Idle');
$r = query($m, 'example.com');
is($r->{code}, 500, '... the damaged entry is not served');
like($r->{body}, qr/tl-8\/entries: offset \d+, SN 2: not the entry the index holds/,
    '... naming the file, offset and SN');
like(slurp($m->{log}), qr/tl-8\/entries: .*SN 2: .*the copy is damaged/,
    '... and logged');
stop_daemon($m->{pid});
# Without the index, the start checks the copy whole and refuses it.
system('rm', '-r', "$d/m/data/index");
$r = run_cmd(['timeout', '10', $SKMirror::MR, '-c', "$d/m/mirror.conf"]);
is($r->{rc}, 78, 'a damaged copy stops an indexing start (EX_CONFIG)');
like($r->{err}, qr/timeline 8: .*entries.*SN 2.*signature/,
    '... naming the timeline, file and SN');

stop_daemon($t{$_}{pid}) for 7, 8, 9;
done_testing();
