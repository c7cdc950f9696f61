#!/usr/bin/perl
# The outbound policy against a next hop that drips its SMTP greeting, a
# byte a second (under any per-read timeout): the whole lookup is bound
# by PolicyTimeout, so the answer (TEMP: undecided, the mail is deferred)
# comes within it; and a client that hangs up ends its lookup, so with
# PolicyMaxConnections taken by such lookups, the slots are free again
# as soon as their clients are gone, not when the lookups give up.  With
# StapleTrust any next hop is asked for its staple, so any domain (a
# bounce to a forged sender's) can drip: that lookup is bound too, and
# undecided is TEMP, not NOTFOUND ("no SK"); so is one that learns
# nothing (no mirror, no staple), unless PolicyUndecided says notfound.
#
# drip.example resolves to 127.0.0.1 in a private mount namespace
# (unshare -m) with its own /etc/hosts.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Select;
use IO::Socket::INET;
use POSIX ();
use Time::HiRes qw(time sleep);
use SKTest;
use SKPostfix qw(private_hosts_reexec private_hosts);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
my $why = private_hosts_reexec();
plan(skip_all => $why) if $why;
my $dir = tmpdir();
$why = private_hosts($dir, qw(drip.example forged.example));
plan(skip_all => $why) if $why;

my $r = sk('keygen', '-n', 'drip.example', '-o', "$dir/sk.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 0, 'sk keygen') or diag($r->{err});

# The next hop: each connection gets "220-" and then one byte a second,
# a greeting that never ends.
my $dport = free_port();
my $lsn = IO::Socket::INET->new(Listen => 16, LocalAddr => '127.0.0.1',
    LocalPort => $dport, Proto => 'tcp', ReuseAddr => 1)
    or die "listen: $!";
my $drip = fork // die "fork: $!";
if ($drip == 0) {
    local $SIG{CHLD} = 'IGNORE';
    local $SIG{PIPE} = 'IGNORE';
    while (my $c = $lsn->accept) {
        next if fork // 1;
        syswrite($c, '220-') or POSIX::_exit(0);
        while (syswrite($c, 'a')) {
            sleep 1;
        }
        POSIX::_exit(0);
    }
    POSIX::_exit(0);
}
close $lsn;
END { kill 'KILL', $drip if $drip; }

my $timeout = 4;
my ($mport, $pport) = (free_port(), free_port());
spew("$dir/trust", "drip.example smtp $dir/sk.key.pub\n");
# StapleTrust's timeline and mirror are never reached: the staple never
# comes.
spew("$dir/staple-trust.conf", "timeline = 7 $dir/sk.key.pub\n"
    . "mirror = https://127.0.0.1:1 $dir/sk.key.pub\n");
spew("$dir/sk-milter.conf", join('', map { "$_\n" }
    "Socket inet:$mport\@127.0.0.1", 'Name mx.src.example', 'Syslog no',
    "TrustFile $dir/trust", "StapleTrust $dir/staple-trust.conf",
    "PolicyCache $dir/pcache",
    "PolicySocket inet:$pport\@127.0.0.1",
    'PolicyMaxConnections 6', "PolicyTimeout $timeout"));
my $log = "$dir/milter.log";
my $mpid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
ok(wait_for_port($pport), 'policy socket listens') or diag(slurp($log));

# A socketmap client: connect and send one request.
sub ask {
    my ($key) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$pport",
        Timeout => 2) or return undef;
    my $req = "sk $key";
    syswrite($s, length($req) . ":$req,");
    return $s;
}

# Its reply: the netstring's data, or undef if none within secs.
sub answer {
    my ($s, $secs) = @_;
    my ($buf, $end) = ('', time + $secs);
    return undef unless $s;
    my $sel = IO::Select->new($s);
    while ($buf !~ /^(\d+):/ || length($buf) < length($1) + 2 + $1) {
        my $left = $end - time;
        return undef if $left <= 0 || !$sel->can_read($left);
        return undef unless sysread($s, $buf, 4096, length $buf);
    }
    $buf =~ /^(\d+):/;
    return substr($buf, length($1) + 1, $1);
}

my $hop = "[drip.example]:$dport";
for my $c ([$hop, 'its SK in the TrustFile'],
    ["[forged.example]:$dport", 'no SK known, StapleTrust'])
{
    my $t0 = time;
    my $s = ask($c->[0]);
    my $v = answer($s, $timeout + 3);
    my $took = time - $t0;
    like($v // '(none)', qr/^TEMP .*PolicyTimeout \($timeout s\)/,
        "a dripping next hop, $c->[1]: TEMP (undecided, deferred)")
        or diag(slurp($log));
    cmp_ok($took, '<', $timeout + 1.5, "answered within PolicyTimeout "
        . "($timeout s): took " . sprintf('%.1f s', $took));
    close $s if $s;
}

# Connections the milter holds on the policy port (established, or
# hung up by the client and not yet closed by the milter), from
# /proc/net/tcp: local port $pport, state 01 or 08.
sub held_by_milter {
    my $n = 0;
    open(my $fh, '<', '/proc/net/tcp') or return -1;
    while (<$fh>) {
        my @f = split;
        $n++ if ($f[1] // '') =~ /:([0-9A-F]{4})$/ && hex($1) == $pport
            && $f[3] =~ /^0[18]$/;
    }
    return $n;
}

# Six lookups take every slot; their clients hang up after a second.  The
# two connections above must be gone first: a thread that has not yet
# seen its client's close still holds a slot, and the sixth would be
# turned away in its place.
ok(wait_until(sub { held_by_milter() == 0 }, 5),
    'the milter has closed the connections above');
my @held = map { ask($hop) } 1 .. 6;
ok(wait_until(sub { held_by_milter() == 6 }, 5),
    'six connections open on the policy port') or diag(held_by_milter() . ' held');
is(scalar(grep { defined } @held), 6, 'six lookups of the dripping hop');
sleep 1;
my $s = ask('[127.0.0.1]');
is(answer($s, 1), undef, 'a seventh client is turned away meanwhile');
close $_ for grep { defined } @held;
my $served = wait_until(sub {
    my $c = ask('[127.0.0.1]') or return 0;
    return (answer($c, 0.5) // '') eq 'NOTFOUND ';
}, 1.5);
ok($served, 'once the six hung up, a new lookup is served within 1.5 s, '
    . 'well before their lookups would have timed out') or diag(slurp($log));
like(slurp($log), qr/deferring: the policy client hung up/,
    'the abandoned lookups are logged as such');

# Undecided without a drip: no mirror answers, nothing is cached, the
# next hop serves no staple.  TEMP; NOTFOUND with PolicyUndecided
# notfound, said in the log.
my $closed = free_port();
my $v = answer(ask("[forged.example]:$closed"), $timeout + 3) // '(none)';
like($v, qr/^TEMP sk-milter: undecided for forged\.example/,
    'undecided: TEMP') or diag(slurp($log));
my $n = () = slurp($log) =~ /reloaded /g;
spew("$dir/sk-milter.conf", slurp("$dir/sk-milter.conf")
    . "PolicyUndecided notfound\n");
kill 'HUP', $mpid;
ok(wait_until(sub { (() = slurp($log) =~ /reloaded /g) > $n }, 10),
    'PolicyUndecided notfound: reloaded');
$v = answer(ask("[forged.example]:$closed"), $timeout + 3) // '(none)';
is($v, 'NOTFOUND ', 'PolicyUndecided notfound: NOTFOUND');
like(slurp($log), qr/policy \[forged\.example\]:$closed: NOTFOUND \(PolicyUndecided notfound\): undecided: no mirror gave a fresh enough answer/,
    '... logged as such');

ok(daemon_alive($mpid), 'sk-milter still running');
is(stop_daemon($mpid), 0, 'clean exit');
run_cmd(['umount', $_]) for '/etc/hosts', '/etc/resolv.conf';
done_testing();
