#!/usr/bin/perl
# Torn and cut files of sk-timeline, each as a crash or a failing disk
# leaves them.  A torn tail past everything signed-head covers (a write
# that was never acknowledged) is cut at start and logged; anything cut
# inside what was acknowledged refuses to start, names the file (offset,
# SN or line) and changes nothing -- the old daemon truncated first and
# then refused, or started one entry short and forked.  Every file:
# entries.log, certs.log, incorporated.log, chunks/index, a chunk file,
# signed-head.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my $inter = make_intermediate($d, $ca, 'inter');
my $sk = ed25519_key($d, 'sk');
my $crt = issue($d, $inter, $sk, 'example.com', "$d/example");

mkdir "$d/$_" for qw(peer tl);
my $p = start_timeline("$d/peer", tid => 8, operator_key => "$d/operator.pub");
ok($p->{up}, 'peer timeline listens') or BAIL_OUT(slurp($p->{log}));
append($p, root_entry(cert => "$ca.crt", key => $op));
my $nb = ed25519_key($d, 'nb');
my @peer = (append($p, bind_entry(name => 'b.example', key => $nb,
    chain => [issue($d, $ca, $nb, 'b.example', "$d/b")]))->{body});
push @peer, append($p, cs_entry(name => 'b.example', services => "https:$_",
    key => $nb))->{body} for 1 .. 2;
stop_daemon($p->{pid});

my $t = start_timeline("$d/tl", operator_key => "$d/operator.pub",
    peer => "8 $d/peer/timeline.pub", chunk_interval => 1);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
sub add {
    my $r = append($t, @_);
    is($r->{code}, 201, 'stored') or diag($r->{body});
    return $r->{body};
}
add(root_entry(cert => "$ca.crt", key => $op));
add(bind_entry(name => 'example.com', key => $sk, chain => [$crt, "$inter.crt"]));
add(incorporate_entry($peer[0]), $peer[0]);
# Three appends, each a batch ended by its Map-Root entry: SN 0 to 5, the
# last a Map-Root entry.
ok(wait_until(sub { http('GET', "$t->{url}/status")->{body}
    =~ /^Max-Published-SN: 5$/m }, 10), 'published');
stop_daemon($t->{pid});

my %file = map { $_ => slurp("$d/tl/$_") }
    qw(entries.log certs.log incorporated.log chunks/index signed-head);
sub restore { spew("$d/tl/$_", $file{$_}) for keys %file }
sub tl { return run_cmd([$SKTimeline::TL, @_, '-c', "$d/tl/tl.conf"]) }

# A start that must refuse: named, and nothing changed.
sub refused {
    my ($what, $re, $name) = @_;
    my %before = map { $_ => slurp("$d/tl/$_") } keys %file;
    my $mark = -s $t->{log};
    restart_timeline($t);
    ok(!$t->{up}, "$what: refuses to start");
    is(stop_daemon($t->{pid}) >> 8, 78, '... exit 78');
    like(substr(slurp($t->{log}), $mark), $re, '... naming it');
    ok(!grep({ slurp("$d/tl/$_") ne $before{$_} } keys %file),
        '... nothing changed');
    like(tl('--check')->{out}, $re, '... and --check says the same');
    restore();
}

# A start that cuts a tail nobody was shown, and says so.
sub cut {
    my ($what, $name, $tail, $re) = @_;
    spew("$d/tl/$name", $file{$name} . $tail);
    my $chk = tl('--check');
    is($chk->{rc}, 0, "$what: --check passes") or diag($chk->{out});
    like($chk->{out}, qr/\Q$name\E: note: /, '... noting the tail');
    my $mark = -s $t->{log};
    restart_timeline($t);
    ok($t->{up}, '... it starts') or diag(slurp($t->{log}));
    like(substr(slurp($t->{log}), $mark), $re, '... cutting the tail');
    stop_daemon($t->{pid});
    is(slurp("$d/tl/$name"), $file{$name}, '... back to what it was');
}

# entries.log
my @e = parse_entries($file{'entries.log'});
my $lastoff = length($file{'entries.log'}) - length($e[-1]);
cut('a torn entry past the head', 'entries.log', substr($e[0], 0, 77),
    qr/entries\.log: truncating a torn tail of 77 bytes at offset \d+ \(SN 6\)/);
spew("$d/tl/entries.log", substr($file{'entries.log'}, 0, -9));
refused('the last acknowledged entry cut',
    qr/entries\.log: offset $lastoff \(SN 5\): the log ends here, yet signed-head says SN 0\.\.5 were signed/);
spew("$d/tl/entries.log", substr($file{'entries.log'}, 0, $lastoff));
refused('the last acknowledged entry gone whole',
    qr/entries\.log: offset $lastoff \(SN 5\): the log ends here/);

# certs.log
cut('a torn certificate line', 'certs.log', 'MIIBkTCB',
    qr/certs\.log: truncating a torn last line of 8 bytes \(line 2\)/);
spew("$d/tl/certs.log", substr($file{'certs.log'}, 0, -20));
refused('the certificate an entry refers to cut',
    qr/entries\.log: offset \d+ \(SN 2\): certificate \@\S+ is not in certs\.log/);

# incorporated.log
cut('a torn copy nothing refers to', 'incorporated.log', substr($peer[1], 0, 50),
    qr/incorporated\.log: truncating a torn tail of 50 bytes/);
spew("$d/tl/incorporated.log", substr($file{'incorporated.log'}, 0, -30));
refused('the copy an Incorporate refers to cut',
    qr/entries\.log: offset \d+ \(SN 4\): Incorporate: no copy of the entry in incorporated\.log/);

# chunks/index (replaced atomically: a cut one is damage)
spew("$d/tl/chunks/index", substr($file{'chunks/index'}, 0, -5));
refused('a cut chunk index', qr/chunks\/index: line \d+: no newline/);

# signed-head: a slot torn by a crash mid-write; both slots: damage
my $sh = $file{'signed-head'};
my ($s0, $s1) = $sh =~ /\A(.{128})(.{128})\z/s;
my $newer = (split / /, $s0)[3] >= (split / /, $s1)[3] ? 0 : 1;
my $older = 1 - $newer;
substr($sh, 128 * $older + 20, 10) = 'xxxxxxxxxx';
spew("$d/tl/signed-head", $sh);
my $mark = -s $t->{log};
restart_timeline($t);
ok($t->{up}, 'a torn signed-head slot: starts on the other');
like(substr(slurp($t->{log}), $mark), qr/signed-head: slot $older unreadable, using slot $newer \(tree size 6\)/,
    '... saying so');
stop_daemon($t->{pid});
restore();
spew("$d/tl/signed-head", 'x' x 256);
refused('both slots damaged',
    qr/signed-head: damaged \(256 bytes, neither slot holds a signed head\)/);

# A chunk file cut: start does not read chunks, --check does; --repair
# lists the chunks that check, and the rest is published again.
my ($first, $last) = split / /, (split /\n/, $file{'chunks/index'})[-1];
my $cfile = "$first-$last.bz2";
my $cbytes = slurp("$d/tl/chunks/$cfile");
spew("$d/tl/chunks/$cfile", substr($cbytes, 0, -10));
my $r = tl('--check');
is($r->{rc}, 1, 'a cut chunk file: --check fails');
like($r->{out}, qr/chunks\/\Q$cfile\E: \S+\/chunks\/\Q$cfile\E: not bzip2 data/,
    '... naming it');
$r = tl('--repair');
is($r->{rc}, 0, '--repair') or diag($r->{out});
like($r->{out}, qr/making the index anew/, '... makes the index anew');
restart_timeline($t);
ok($t->{up}, 'starts');
ok(wait_until(sub { http('GET', "$t->{url}/status")->{body}
    =~ /^Max-Published-SN: 5$/m }, 10), '... and publishes again');
stop_daemon($t->{pid});
is(tl('--check')->{rc}, 0, '--check passes');
unlike(slurp($t->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
