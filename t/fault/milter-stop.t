#!/usr/bin/perl
# Fault: sk-milter stopped (SIGTERM) while six MTA connections send mail
# through it, each message on a connection of its own as a Postfix smtpd
# session does (connect, HELO, then a message), with an
# Authentication-Results header (read against the
# configuration's AuthservID).  It used to free the configuration while
# connection threads still ran, and died of SIGSEGV (skm_filter.c, conf
# NULL) in most rounds.  Now it stops accepting, lets the sessions end,
# then frees: every round exits 0, no signal, no sanitizer report (run on
# the ASan+UBSan build in the fault stage).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use POSIX ();
use Time::HiRes qw(sleep);
use SKTest;
use SKMilter qw(macros);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;

my $dir = tmpdir();
spew("$dir/trust", "example.com smtp\n");
my $rounds = 10;
my $clients = 6;

# One MTA: a message per connection until the milter stops answering.
sub client {
    my ($port, $done) = @_;
    open(my $fh, '>>', $done) or return;
    for (my $n = 0; ; $n++) {
        my $m = SKMilter->connect($port) or return;
        my ($cmd) = $m->negotiate;
        return unless defined $cmd;
        # as an smtpd: connect and HELO, a client's round trip, then MAIL
        $m->send('C', "client.example\0" . '4' . pack('n', 25)
            . "127.0.0.1\0");
        $m->send('H', "client.example\0");
        return unless defined(($m->reply(5))[0])
            && defined(($m->reply(5))[0]);
        sleep 0.005;
        $m->send('D', 'M' . macros('{tls_version}', 'TLSv1.3'));
        $m->send('M', "<a$n\@example.com>\0");
        $m->send('L', "From\0a\@example.com\0");
        $m->send('L', "Authentication-Results\0mx.example.org; sk=pass\0");
        for (1 .. 3) {
            return unless defined(($m->reply(5))[0]);
        }
        $m->send('D', 'E' . macros('i', "Q$$.$n"));
        $m->send('E', '');
        while (my ($c) = $m->reply(5)) {
            if ($c =~ /^[catry]$/) {
                syswrite($fh, '.');     # one message through
                last;
            }
        }
        $m->send('Q', '');
    }
}

for my $round (1 .. $rounds) {
    my $port = free_port();
    spew("$dir/sk-milter.conf", join('', map { "$_\n" }
        "Socket inet:$port\@127.0.0.1", 'Name mx.example.org',
        "TrustFile $dir/trust", 'Syslog no'));
    my $log = "$dir/milter-$round.log";
    my $pid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
    if (!wait_for_port($port, 30)) {
        fail("round $round: the milter listens");
        diag(slurp($log));
        last;
    }
    my @kids;
    for (1 .. $clients) {
        my $k = fork // die "fork: $!";
        if ($k == 0) {
            # never die here: the parent's END would stop its daemons
            eval { client($port, "$dir/done-$round") };
            POSIX::_exit(0);
        }
        push @kids, $k;
    }
    # the stop must come while mail flows: wait until some has gone
    # through (a loaded machine may take a while to start the clients)
    wait_until(sub { (-s "$dir/done-$round" // 0) >= $clients }, 30);
    my $st = stop_daemon($pid, 30);
    kill 'KILL', @kids;
    waitpid($_, 0) for @kids;
    my $text = slurp($log);
    is($st, 0, "round $round: SIGTERM under load: exit 0, no signal")
        or diag(sprintf("exit %d, signal %d\n", $st >> 8, $st & 127)
            . $text);
    unlike($text, qr/Sanitizer|runtime error/,
        "round $round: no sanitizer report");
    cmp_ok(-s "$dir/done-$round" // 0, '>=', $clients,
        "round $round: mail went through until the stop");
    like($text, qr/stopped\n/, "round $round: logged its stop");
}
done_testing();
