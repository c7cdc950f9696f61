#!/usr/bin/perl
# Messages/s through a private Postfix (smtpd with the milter, relaying to
# smtp-sink), loaded by smtp-source with parallel sessions.  Setups: no
# milter, the no-op milter and sk-milter, each milter on a loopback TCP
# socket and on a unix socket.  They take turns over several rounds and
# each keeps its best round, so every reference is from this same run.
#
# With a second argument "metrics" (bench_milter_metrics.sh) the setups
# are sk-milter on TCP without and with MetricsListen, and the line is
#   milter-metrics-cost  msg/s with metrics on vs off          target 0.98
# after a scrape shows every message of the metrics setup was counted;
# there the ratio is the median of the rounds' ratios (each round runs
# both, in alternating order) and the figures the medians of the rates:
# one best round each swung the ratio from 0.93 to 1.05 between quiet
# runs.
use strict;
use warnings;
use Time::HiRes qw(time sleep);
use SKTest;
use SKPostfix;

my $build = shift // 'build';
my $metrics = (shift // '') eq 'metrics';
# BENCH_MILTER="messages sessions rounds" overrides the defaults.
my ($msgs, $sess, $rounds) = split ' ', ($ENV{BENCH_MILTER}
    // ($metrics ? '1000 20 7' : '1000 20 3'));
my $dir = tmpdir();
spew("$dir/trust", "example.com smtp\n");

# name => [milter command (with MILTER for the socket), socket kind]
my $skm = ["$build/sk-milter", '-f', '-c', 'CONF'];
my %milter = $metrics ? ('sk' => [$skm, 'inet'], 'sk-metrics' => [$skm, 'inet'])
    : (
    'noop' => [["$build/bench/noop_milter", 'MILTER'], 'inet'],
    'noop-unix' => [["$build/bench/noop_milter", 'MILTER'], 'unix'],
    'sk' => [$skm, 'inet'],
    'sk-unix' => [$skm, 'unix'],
);
my %setup = $metrics ? () : (none => '');
my $mport = $metrics ? free_port() : 0;
my @pids;

# The sockets must be reachable by Postfix's smtpd (user postfix): the
# umask for the no-op milter's, SocketMode for sk-milter's.
my $oldmask = umask 0;
for my $name (sort keys %milter) {
    my ($cmd, $kind) = @{ $milter{$name} };
    my ($lib, $pf, $port);
    if ($kind eq 'inet') {
        $port = free_port();
        ($lib, $pf) = ("inet:$port\@127.0.0.1", "inet:127.0.0.1:$port");
    } else {
        ($lib, $pf) = ("unix:$dir/$name.sock", "unix:$dir/$name.sock");
    }
    spew("$dir/$name.conf", "Socket $lib\nName mx.example.org\n"
        . "TrustFile $dir/trust\nSyslog no\n"
        . ($kind eq 'unix' ? "SocketMode 0666\n" : '')
        . ($name eq 'sk-metrics' ? "MetricsListen 127.0.0.1:$mport\n" : ''));
    my @argv = map { $_ eq 'MILTER' ? $lib : $_ eq 'CONF'
        ? "$dir/$name.conf" : $_ } @$cmd;
    push @pids, run_daemon(\@argv, "$dir/$name.log");
    my $up = $port ? wait_for_port($port)
        : wait_until(sub { -S "$dir/$name.sock" }, 10);
    die "milter $name did not start: " . slurp("$dir/$name.log") if !$up;
    $setup{$name} = $pf;
}
umask $oldmask;

my $pf = SKPostfix->new(dir => $dir, main => { smtpd_milters => '' },
    nodump => 1)->start;
my @order = sort keys %setup;
my (%best, %rates, @ratios);
for my $round (1 .. $rounds) {
    for my $name ($round % 2 ? @order : reverse @order) {
        $pf->postconf('-e', "smtpd_milters=$setup{$name}");
        $pf->postfix('reload');
        sleep 1.5;
        my $t0 = time;
        my $r = run_cmd(['smtp-source', '-s', $sess, '-m', $msgs,
            '-f', 'alice@example.com', '-t', 'bob@dest.example',
            "127.0.0.1:$pf->{smtp}"]);
        my $rate = $msgs / (time - $t0);
        die "smtp-source ($name): $r->{err}" if $r->{rc};
        $best{$name} = $rate if !$best{$name} || $rate > $best{$name};
        push @{$rates{$name}}, $rate;
    }
    push @ratios, $rates{'sk-metrics'}[-1] / $rates{sk}[-1] if $metrics;
}
$pf->stop;

# Every message through sk-metrics (no warm-up round: rounds x messages) was
# counted by its verdict.
my $counted = 0;
if ($metrics) {
    my $r = run_cmd(['curl', '-s', "http://127.0.0.1:$mport/metrics"]);
    $counted += $1 while $r->{out} =~ /^sk_milter_messages_total\{[^}]*\} (\d+)$/mg;
    die "bench_milter: metrics counted $counted of "
        . $rounds * $msgs . " messages\n" if $counted < $rounds * $msgs;
}
stop_daemon($_) for @pids;

sub line {
    my ($label, $name, $ref, $target) = @_;
    printf "BENCH %s %.0f msg/s ref=%.0f ratio=%.2f target=%.2f\n", $label,
        $best{$name}, $best{$ref}, $best{$name} / $best{$ref}, $target;
}
sub median {
    my @v = sort { $a <=> $b } @_;
    return @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
}
if ($metrics) {
    printf "sk_milter_messages_total %d after %d messages\n", $counted,
        $rounds * $msgs;
    printf "# round ratios: %s\n", join ' ', map { sprintf '%.3f', $_ }
        @ratios;
    printf "BENCH milter-metrics-cost %.0f msg/s ref=%.0f ratio=%.3f "
        . "target=0.98\n", median(@{$rates{'sk-metrics'}}),
        median(@{$rates{sk}}), median(@ratios);
} else {
    line('milter-vs-noop', 'sk', 'noop', 0.95);
    line('milter-vs-none', 'sk', 'none', 0.80);
    line('milter-unix-vs-noop-unix', 'sk-unix', 'noop-unix', 0.95);
    line('milter-unix-vs-none', 'sk-unix', 'none', 0.80);
}
printf "# %s: %.0f msg/s\n", $_, $best{$_} for @order;
