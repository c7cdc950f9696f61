#!/usr/bin/perl
# What a peer on the milter socket can make sk-milter hold, and for how
# long.  Before, each connection that declared a 1 MiB packet had a 1 MiB
# buffer and a thread for up to two hours, and there was no cap: 300 such
# connections took 320 MB.  Now:
#
#   - the read buffer grows as a packet's bytes arrive: 200 connections
#     that declare 1 MiB and send 16 bytes cost a few MB, not 200;
#   - MaxConnections caps the connections (threads): with 1 MiB sent on
#     each of 200, the memory is that of MaxConnections;
#   - over the cap a connection is closed at once, logged at most 20
#     times a minute, and the open sessions keep working;
#   - a packet begun must be whole within PacketTimeout, even one that
#     drips a byte at a time; an idle connection between packets is kept
#     (Postfix keeps its milter connections open);
#   - "closing the connection" lines are at most 20 a minute.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use Time::HiRes qw(time sleep);
use SKTest;
use SKMilter qw(macros);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
plan(skip_all => 'no /proc') unless -r "/proc/$$/status";
$SIG{PIPE} = 'IGNORE';

my $dir = tmpdir();
my $asan = run_cmd(['ldd', $skm])->{out} =~ /libasan/;

# A private sk-milter with these extra lines; its pid and port.
sub milter {
    my ($name, @lines) = @_;
    my $port = free_port();
    spew("$dir/$name.conf", join('', map { "$_\n" }
        "Socket inet:$port\@127.0.0.1", 'Name mx.example.org',
        'Syslog no', @lines));
    my $pid = run_daemon([$skm, '-f', '-c', "$dir/$name.conf"],
        "$dir/$name.log");
    ok(wait_for_port($port, 30), "$name: milter listens")
        or diag(slurp("$dir/$name.log"));
    return ($pid, $port);
}

# /proc/PID/status fields, in kB or counts.
sub status {
    my ($pid) = @_;
    my %st;
    open(my $f, '<', "/proc/$pid/status") or return %st;
    while (<$f>) {
        $st{$1} = $2 if /^(VmRSS|Threads):\s+(\d+)/;
    }
    return %st;
}

# A negotiated session; undef if the milter does not answer.
sub session {
    my ($port) = @_;
    my $m = SKMilter->connect($port) or return undef;
    my ($cmd) = $m->negotiate;
    return ($cmd // '') eq 'O' ? $m : undef;
}

# A session's MAIL gets "continue": the session works.
sub works {
    my ($m) = @_;
    return 0 unless $m;
    $m->send('D', 'M' . macros('{daemon_name}', 'smtpd'));
    $m->send('M', "<a\@example.com>\0");
    return ((($m->reply(10))[0] // '') eq 'c') ? 1 : 0;
}

# n connections, each sending $bytes; those the milter took (a refused
# one is closed at once and its write fails or reads EOF).
sub flood {
    my ($port, $n, $bytes) = @_;
    my @s;
    for (1 .. $n) {
        my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
            Timeout => 5) or last;
        binmode $s;
        my $off = 0;
        while ($off < length $bytes) {
            my $w = syswrite($s, $bytes, length($bytes) - $off, $off);
            last unless $w;
            $off += $w;
        }
        push @s, $s;
    }
    return @s;
}

my $big = pack('N', 0x00100001) . 'D';     # 1 MiB declared, command D

# --- Memory: the buffer follows the bytes, the cap bounds the rest. ---
{
    my ($pid, $port) = milter('mem', 'MaxConnections 300');
    my $good = session($port);
    ok(works($good), 'mem: a session works');
    my %before = status($pid);

    # Under the cap: 200 connections, 16 bytes of a 1 MiB packet each.
    my @s = flood($port, 200, $big . ('x' x 16));
    is(scalar @s, 200, 'mem: 200 connections declaring 1 MiB');
    wait_until(sub { my %st = status($pid);
        ($st{Threads} // 0) >= $before{Threads} + 200 }, 20);
    sleep 1;
    my %after = status($pid);
    my $grew = $after{VmRSS} - $before{VmRSS};
    # When the buffer was grown up front, the copy into it touched 64 KiB
    # more a connection (about 80 kB each in all, 280 kB under ASan); now
    # a thread's stack and the first page of a 64 KiB buffer (about 15 kB,
    # 140 kB under ASan, whose shadow and fake stacks cost more).
    my $limit = ($asan ? 200 : 40) * 200;
    cmp_ok($grew, '<', $limit, "mem: 200 connections declaring 1 MiB, 16 "
        . "bytes sent: RSS grew $grew kB (under $limit kB)");
    ok(works($good), 'mem: the session still works');
    close $_ for @s;

    # 200 connections sending 1 MiB - 1 bytes each, MaxConnections now
    # 60 (SIGHUP): at most 60 are taken, so the memory is the cap's.
    spew("$dir/mem.conf", slurp("$dir/mem.conf") =~ s/MaxConnections 300/MaxConnections 60/r);
    kill 'HUP', $pid;
    ok(wait_until(sub { slurp("$dir/mem.log") =~ /reloaded/ }, 10),
        'mem: reloaded with MaxConnections 60');
    wait_until(sub { my %st = status($pid);
        ($st{Threads} // 0) <= $before{Threads} }, 20);
    %before = status($pid);
    @s = flood($port, 200, $big . ('x' x (1024 * 1024 - 1)));
    sleep 1;
    %after = status($pid);
    $grew = $after{VmRSS} - $before{VmRSS};
    cmp_ok($after{Threads} - $before{Threads}, '<', 60,
        'mem: 200 connections sending 1 MiB: under MaxConnections '
        . 'threads more (' . ($after{Threads} - $before{Threads}) . ')');
    # The cap's 60 MiB and some; 200 MiB (and 200 threads) before.
    $limit = 1024 * ($asan ? 160 : 80);
    cmp_ok($grew, '<', $limit, "mem: RSS grew $grew kB (under $limit kB: "
        . 'the cap\'s, not 200 MiB)');
    ok(works($good), 'mem: the session still works at the cap');
    close $_ for @s;
    ok(daemon_alive($pid), 'mem: the milter is alive');
    is(stop_daemon($pid, 30), 0, 'mem: clean exit');
}

# --- The cap, the packet deadline, the log limit. ---
my $ptime = 2;
my ($pid, $port) = milter('cap', 'MaxConnections 4', "PacketTimeout $ptime");
my $log = "$dir/cap.log";
my $good = session($port);
my @idle = map { session($port) } 1 .. 3;
is(scalar(grep { defined } @idle), 3, 'cap: 4 sessions open (the cap)');

# Over the cap: closed at once, before any reply.
my @over;
for (1 .. 30) {
    my $m = SKMilter->connect($port) or next;
    $m->send('O', pack('NNN', 6, 0x1ff, 0));
    push @over, $m;
}
is(scalar(grep { $_->closed(5) } @over), 30,
    'cap: 30 connections over MaxConnections are closed');
ok(works($good), 'cap: the session open before still works');
my $refused = () = slurp($log) =~ /Socket: 4 connections open \(MaxConnections\): closing a new one/g;
ok($refused >= 1 && $refused <= 2 * 20,
    "cap: refusals logged, at most 20 a minute ($refused lines for 30)");

# A slot freed is taken again.
close((pop @idle)->{s});
my $again;
ok(wait_until(sub { $again = session($port) }, 10),
    'cap: after one session ends, a new one is taken');

# A packet begun must end within PacketTimeout: half-sent, then quiet.
close((pop @idle)->{s});
close($again->{s});
my $half;
wait_until(sub { $half = session($port) }, 10);
ok($half, 'deadline: a session for the half-sent packet');
my $t0 = time;
$half->raw(pack('N', 1000) . "M<a\@example.com>");
ok($half->closed($ptime + 8), 'deadline: a half-sent packet is dropped');
my $took = time - $t0;
cmp_ok($took, '>=', $ptime - 0.5, sprintf('deadline: not before '
    . "PacketTimeout ($ptime s): %.1f s", $took));
cmp_ok($took, '<', $ptime + 3, sprintf('deadline: soon after PacketTimeout: '
    . '%.1f s', $took));
like(slurp($log), qr/Socket: closing the connection from 127\.0\.0\.1 port \d+: packet not complete within PacketTimeout \($ptime s\)/,
    'deadline: logged');

# A packet that drips a byte every half second is bound the same way,
# though each byte comes well within any per-read timeout.
my $drip;
wait_until(sub { $drip = session($port) }, 10);
ok($drip, 'drip: a session');
my $pkt = pack('N', 41) . 'M<' . ('d' x 36) . "\@x>\0";
$t0 = time;
my $sent = 0;
while ($sent < length($pkt) - 1 && time - $t0 < $ptime + 5) {
    last unless $drip->raw(substr($pkt, $sent++, 1));
    sleep 0.5;
}
ok($drip->closed($ptime + 5), "drip: dropped ($sent bytes of "
    . length($pkt) . ' sent)');
$took = time - $t0;
cmp_ok($took, '<', $ptime + 3, sprintf('drip: within PacketTimeout: %.1f s',
    $took));

# Idle between packets for longer than PacketTimeout: kept.
ok(works($good), 'idle: the session quiet for over PacketTimeout still '
    . 'works');

# Malformed packets: each closes its connection, the lines are limited.
my $before = () = slurp($log) =~ /closing the connection from/g;
for (1 .. 60) {
    wait_until(sub {
        my $m = SKMilter->connect($port) or return 0;
        $m->raw(pack('N', 5) . 'Xabcd');
        return $m->closed(5);
    }, 5);
}
my $text = slurp($log);
my $lines = () = $text =~ /closing the connection from/g;
$lines -= $before;
ok($lines >= 1 && $lines < 60,
    "log: $lines of 60 malformed-packet lines shown (at most 20 a minute)");
ok(works($good), 'log: the session still works');
ok(daemon_alive($pid), 'the milter is alive');
is(stop_daemon($pid, 30), 0, 'clean exit');
done_testing();
