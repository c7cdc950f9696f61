#!/usr/bin/perl
# sk-timeline's index (data_dir/index/, LMDB) under faults:
#  1. kill -9 at random moments of a burst of appends, with the index
#     flushed every few entries so that kills land in and between index
#     writes: every restart takes the index as it is (no rebuild), reads
#     only the log past it, every acknowledged entry is there and the
#     state it holds refuses what it must (a second Bind, a replayed
#     Change-Services); --check finds the index as the log implies;
#  2. a damaged index (garbage over data.mdb's meta pages, data.mdb cut
#     short, or gone) is rebuilt from the log with a line saying why, and
#     the daemon answers as before; --check names the damage, --repair
#     rebuilds it;
#  3. with SK_INDEX_N (default 10000) Binds: a restart with the index
#     level with the log reads no entry, one after kill -9 reads only the
#     tail; start time and peak RSS (VmHWM) next to a rebuild's.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use POSIX qw(_exit);
use Time::HiRes qw(sleep time);
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $BUILD = $ENV{BUILD} // 'build';
my $CLIENT = "$FindBin::Bin/../../$BUILD/bench/tl_client";
my $N = $ENV{SK_INDEX_N} // 10000;
my ($CLIENTS, $PER_CLIENT, $KILLS) = (6, 24, 6);

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my $sk = ed25519_key($d, 'sk');
my $crt = issue($d, $ca, $sk, 'example.com', "$d/example");

# Log lines written since offset $from.
sub log_since { my ($t, $from) = @_; return substr(slurp($t->{log}), $from) }

sub restart_logged {
    my ($t) = @_;
    my $from = -s $t->{log} // 0;
    restart_timeline($t);
    return log_since($t, $from);
}

my $t = start_timeline($d, operator_key => "$d/operator.pub",
    sk_budget => 1000000, index_batch => 3, chunk_interval => 1,
    rate_per_client => 0);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'root added');
my $bind0 = bind_entry(name => 'example.com', key => $sk, chain => [$crt]);
is(append($t, $bind0)->{code}, 201, 'name bound');
# A clean stop writes the index: the storm starts with one.
stop_daemon($t->{pid});
restart_timeline($t);
ok($t->{up}, 'restarts');

# ---- 1. kill -9 during a burst ----
my @work = map {
    my $c = $_;
    my @cs = map { my $s = 'https:' . (1000 + $c * 100 + $_);
        [$s, cs_entry(name => 'example.com', services => $s, key => $sk)] }
        1 .. $PER_CLIENT;
    for my $i (0 .. 1) {
        my $name = "n$i.c$c.example";
        my $nk = ed25519_key($d, "n$i.c$c");
        my $nc = issue($d, $ca, $nk, $name, "$d/$name");
        splice @cs, $i * 12, 0, [$name, bind_entry(name => $name, key => $nk,
            chain => [$nc])];
    }
    \@cs
} 0 .. $CLIENTS - 1;

my @kids;
for my $c (0 .. $CLIENTS - 1) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open my $out, '>', "$d/acked.$c" or _exit(1);
        for my $w (@{$work[$c]}) {
            my ($tag, $e) = @$w;
            for my $try (1 .. 100) {
                my $r = append($t, $e);
                if ($r->{code} == 201) {
                    my ($sn) = $r->{body} =~ /^SN: (\d+)$/m;
                    print $out "$sn $tag\n";
                    last;
                }
                # Stored before a kill cut the 201 off: a retry is a replay.
                if ($r->{code} == 403
                    && $r->{body} =~ /: a replay$|already has a Bind/m)
                {
                    print $out "replayed $tag\n";
                    last;
                }
                sleep 0.05;     # daemon down: retry
            }
        }
        close $out;
        _exit(0);
    }
    push @kids, $pid;
}

my ($no_rebuild, $from_index) = (1, 0);
for my $k (1 .. $KILLS) {
    sleep 0.3 + rand(0.7);
    kill 'KILL', $t->{pid};
    stop_daemon($t->{pid});
    my $said = restart_logged($t);
    ok($t->{up}, "restart $k after SIGKILL") or diag($said);
    $no_rebuild &&= $said !~ /rebuilding|building it/;
    diag($said) if $said =~ /rebuilding|building it/;
    $from_index++ if $said =~ /entries \((\d+) from \S+index, \d+ read\)/
        && $1 > 0;
}
waitpid($_, 0) for @kids;
ok($no_rebuild, 'no restart rebuilt the index: each took it as it was');
cmp_ok($from_index, '==', $KILLS, 'each restart took entries from the index '
    . 'and read only the log past it');

my (%acked, @entries);
for my $c (0 .. $CLIENTS - 1) {
    $acked{$_} = 1 for split /\n/, slurp("$d/acked.$c");
}
cmp_ok(scalar(keys %acked), '==', $CLIENTS * ($PER_CLIENT + 2),
    'every client entry was acknowledged (201, or refused as a replay of '
    . 'itself)');
@entries = parse_entries(read_log($d));
my %stored;
$stored{$_}++ for map { /^Services: (https:1\d\d\d)$/m ? $1
    : /^Name: (n\d\.c\d\.example)$/m ? $1 : () } @entries;
my $present = 1;
for my $a (keys %acked) {
    my ($sn, $tag) = split / /, $a;
    $present &&= $sn eq 'replayed' ? $stored{$tag}
        : defined $entries[$sn] && $entries[$sn] =~ /^(Services|Name): \Q$tag\E$/m;
}
ok($present, scalar(keys %acked) . ' acknowledged entries all in the log');
ok(!grep({ $_ > 1 } values %stored), 'none stored twice');

# The state the index holds refuses what it must.
my $r = append($t, $work[0][0][1]);
is($r->{code}, 403, 'a second Bind of an indexed name: 403');
like($r->{body}, qr/already has a Bind/, '... saying why');
$r = append($t, $work[1][1][1]);
like("$r->{code} $r->{body}", qr/^403 .*a replay$/m,
    'a replayed Change-Services: 403 (seen in the index)');

stop_daemon($t->{pid});
$r = run_cmd([$SKTimeline::TL, '--check', '-c', "$d/tl.conf"]);
is($r->{rc}, 0, '--check passes') or diag($r->{out});
like($r->{out}, qr{/index: ok: \d+ entries, every row as the log implies},
    '... the index level with the log, every row as the log implies');

# ---- 2. a damaged index is rebuilt from the log ----
my $said = restart_logged($t);
like($said, qr/entries \(\d+ from \S+index, 0 read\)/,
    'a clean stop leaves the index level: nothing read at start');
# The checkpoint's origin, size and root (its signature line carries the
# time it was made).
sub head { return join "\n", (split /\n/, http('GET', "$t->{url}/checkpoint")->{body})[0 .. 2] }
my %before = (checkpoint => head(),
    entry => http('GET', "$t->{url}/entry/5")->{body},
    bind => append($t, $bind0)->{body});
stop_daemon($t->{pid});

sub same_answers {
    my ($what) = @_;
    is(head(), $before{checkpoint}, "$what: the same tree (checkpoint)");
    is(http('GET', "$t->{url}/entry/5")->{body}, $before{entry},
        "$what: the same entry 5");
    is(append($t, $bind0)->{body}, $before{bind},
        "$what: the same refusal of a second Bind");
}

# A torn tail cut at start changes the log's mtime, not its entries: the
# start records the log as it leaves it, so the next one takes the index.
my $whole = slurp("$d/entries.log");
spew("$d/entries.log", $whole . substr($bind0, 0, 150));
$said = restart_logged($t);
like($said, qr/truncating a torn tail of 150 bytes/, 'a torn tail: cut');
unlike($said, qr/rebuilding|building it/, '... the index taken as it is');
stop_daemon($t->{pid});
$said = restart_logged($t);
like($said, qr/entries \(\d+ from \S+index, 0 read\)/,
    '... and at the next start too');
stop_daemon($t->{pid});

my $mdb = "$d/index/data.mdb";
open my $fh, '+<', $mdb or die "$mdb: $!";
print $fh "\x5a" x 8192;
close $fh;
$r = run_cmd([$SKTimeline::TL, '--check', '-c', "$d/tl.conf"]);
is($r->{rc}, 1, '--check on garbage meta pages: a problem');
like($r->{out}, qr{/index: open: MDB_INVALID}, '... naming LMDB\'s words');
$said = restart_logged($t);
ok($t->{up}, 'garbage over data.mdb: starts');
like($said, qr{/index: index \S+: open: MDB_INVALID: File is not an LMDB file; rebuilding it from the log},
    '... saying why it rebuilds the index');
same_answers('rebuilt after garbage');
stop_daemon($t->{pid});

truncate $mdb, int((-s $mdb) / 2) or die "truncate: $!";
$said = restart_logged($t);
ok($t->{up}, 'data.mdb cut short: starts');
like($said, qr/the file was cut short; rebuilding it from the log/,
    '... saying why');
same_answers('rebuilt after a cut');
stop_daemon($t->{pid});

unlink $mdb or die;
$said = restart_logged($t);
like($said, qr/empty; building it from the log/, 'index gone: built anew');
same_answers('built anew');
stop_daemon($t->{pid});

open $fh, '+<', $mdb or die "$mdb: $!";
print $fh "\x00" x 4096;
close $fh;
$r = run_cmd([$SKTimeline::TL, '--repair', '-c', "$d/tl.conf"]);
is($r->{rc}, 0, '--repair on a damaged index') or diag($r->{out});
like($r->{out}, qr/index: rebuilding it from the log/, '... rebuilds it');
$r = run_cmd([$SKTimeline::TL, '--check', '-c', "$d/tl.conf"]);
is($r->{rc}, 0, '--check passes after it') or diag($r->{out});
$said = restart_logged($t);
like($said, qr/entries \(\d+ from \S+index, 0 read\)/,
    'the repaired index is taken as it is');
same_answers('after --repair');
stop_daemon($t->{pid});

# ---- 3. a big log: a restart reads only the tail ----
SKIP: {
    skip "no $CLIENT", 6 unless -x $CLIENT;
    my $b = tmpdir();
    SKTimeline::ossl('genpkey', '-algorithm', 'ed25519', '-out', "$b/op.key");
    SKTimeline::ossl('pkey', '-in', "$b/op.key", '-pubout', '-out', "$b/op.pub");
    SKTimeline::ossl('genpkey', '-algorithm', 'ed25519', '-out', "$b/sk.key");
    chmod 0600, "$b/op.key", "$b/sk.key";
    SKTimeline::ossl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout',
        "$b/root.key", '-out', "$b/root.crt", '-days', '30', '-subj',
        '/CN=index-root', '-addext', 'basicConstraints=critical,CA:TRUE',
        '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
    SKTimeline::ossl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout',
        "$b/inter.key", '-out', "$b/inter.csr", '-subj', '/CN=index-inter');
    spew("$b/inter.ext", "basicConstraints=critical,CA:TRUE\n"
        . "keyUsage=critical,keyCertSign,cRLSign\n");
    SKTimeline::ossl('x509', '-req', '-in', "$b/inter.csr", '-CA', "$b/root.crt",
        '-CAkey', "$b/root.key", '-CAcreateserial', '-days', '30',
        '-sha256', '-extfile', "$b/inter.ext", '-out', "$b/inter.crt");
    my $big = start_timeline($b, operator_key => "$b/op.pub", ocsp => 'no',
        reply_ms => 60000, threads => 64, chunk_interval => 3600,
        sk_budget => 1000, rate_per_client => 0);
    ok($big->{up}, 'a second timeline listens') or diag(slurp($big->{log}));
    my $c = run_cmd([$CLIENT, '127.0.0.1', $big->{port}, "$b/op.key",
        "$b/sk.key", "$b/root.crt", "$b/inter.crt", "$b/inter.key", $N, 16]);
    diag($c->{out}) if $c->{rc} != 0;
    # The root and the Binds, and a Map-Root entry per batch (as many as
    # the batches the group commit made of the 16 clients' appends).
    my $total = (split /\n/, http('GET', "$big->{url}/checkpoint")->{body})[1];
    cmp_ok($total, '>', $N + 1, "$N Binds and the Map-Root entries of their "
        . 'batches');
    stop_daemon($big->{pid});

    # Start until the first answer, and the peak RSS then.
    my $start = sub {
        my $t0 = time;
        my $said = restart_logged($big);
        wait_until(sub { http('GET', "$big->{url}/status")->{code} == 200 },
            60);
        my $secs = time - $t0;
        my ($hwm) = slurp("/proc/$big->{pid}/status") =~ /^VmHWM:\s+(\d+)/m;
        return ($secs, $hwm, $said);
    };
    my ($s1, $h1, $said1) = $start->();
    like($said1, qr/entries.log: $total entries \($total from \S+index, 0 read\)/,
        "restart with the index level: $total entries from it, none read");

    # A tail the index lacks: appends after the last flush, then kill -9.
    for my $i (1 .. 20) {
        append($big, cs_entry(name => 'n0.bench.example',
            services => "https:$i", key => "$b/sk.key"));
    }
    kill 'KILL', $big->{pid};
    stop_daemon($big->{pid});
    my ($s2, $h2, $said2) = $start->();
    my ($tail) = $said2 =~ /entries \(\d+ from \S+index, (\d+) read\)/;
    # The index (the name map's rows with it) is written every
    # index_batch entries: the tail is the 20 appends and the Map-Root
    # entries of their batches, all since the clean start.
    ok(defined $tail && $tail >= 21 && $tail <= 40,
        'after kill -9: only the tail past the index read (' . ($tail // '?')
        . ' entries)') or diag($said2);
    stop_daemon($big->{pid});

    system('rm', '-rf', "$b/index");
    my ($s3, $h3, $said3) = $start->();
    like($said3, qr/empty; building it from the log/, 'index removed: rebuilt');
    stop_daemon($big->{pid});
    my ($s4, $h4) = $start->();
    stop_daemon($big->{pid});
    diag(sprintf "%d entries: start %.2f s, VmHWM %d kB with the index level;"
        . " %.2f s, %d kB after kill -9 (tail %s); %.2f s, %d kB rebuilding"
        . " it from the log; %.2f s, %d kB from the rebuilt index",
        $total, $s1, $h1, $s2, $h2, $tail // '?', $s3, $h3, $s4, $h4);
    SKIP: {
        skip 'timing: too few entries to tell', 1 if $N < 10000;
        cmp_ok($s4, '<', $s3, 'a start from the index is faster than a '
            . 'rebuild');
    }
}

unlike(slurp($t->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
