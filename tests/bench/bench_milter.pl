#!/usr/bin/perl
# Messages/s through a private Postfix (smtpd with the milter, relaying to
# smtp-sink), loaded by smtp-source with parallel sessions; the three
# setups take turns over several rounds and each keeps its best round.
use strict;
use warnings;
use Time::HiRes qw(time sleep);
use SKTest;
use SKPostfix;

my $build = shift // 'build';
my ($msgs, $sess, $rounds) = (1500, 20, 3);
my $dir = tmpdir();
spew("$dir/trust", "example.com smtp\n");
my $np = free_port();
my $sp = free_port();
spew("$dir/skm.conf", "Socket inet:$sp\@127.0.0.1\nName mx.example.org\n"
    . "TrustFile $dir/trust\nSyslog no\n");
my @pids = (run_daemon(["$build/bench/noop_milter", "inet:$np\@127.0.0.1"],
    "$dir/noop.log"), run_daemon(["$build/sk-milter", '-f', '-c',
    "$dir/skm.conf"], "/dev/null"));
wait_for_port($_) or die "milter on $_ did not start" for $np, $sp;

my $pf = SKPostfix->new(dir => $dir, main => { smtpd_milters => '' },
    nodump => 1)->start;
my %setup = (none => '', noop => "inet:127.0.0.1:$np",
    sk => "inet:127.0.0.1:$sp");
my %best;
for my $round (1 .. $rounds) {
    for my $name (qw(none noop sk)) {
        $pf->postconf('-e', "smtpd_milters=$setup{$name}");
        $pf->postfix('reload');
        sleep 1.5;
        my $t0 = time;
        my $r = run_cmd(['smtp-source', '-s', $sess, '-m', $msgs,
            '-f', 'alice@example.com', '-t', 'bob@dest.example',
            "127.0.0.1:$pf->{smtp}"]);
        my $rate = $msgs / (time - $t0);
        die "smtp-source: $r->{err}" if $r->{rc};
        $best{$name} = $rate if !$best{$name} || $rate > $best{$name};
    }
}
$pf->stop;
stop_daemon($_) for @pids;
printf "BENCH milter-none %.0f msg/s ref=770 ratio=%.2f target=1.00\n",
    $best{none}, $best{none} / 770;
printf "BENCH milter-noop %.0f msg/s ref=420 ratio=%.2f target=1.00\n",
    $best{noop}, $best{noop} / 420;
printf "BENCH milter-vs-noop %.0f msg/s ref=%.0f ratio=%.2f target=0.95\n",
    $best{sk}, $best{noop}, $best{sk} / $best{noop};
printf "BENCH milter-vs-none %.0f msg/s ref=%.0f ratio=%.2f target=0.80\n",
    $best{sk}, $best{none}, $best{sk} / $best{none};
