#!/usr/bin/perl
# A Redis that drips its replies under sk-mirror's answer_cache: a real
# redis-server behind a link that passes its answers on a byte at a time
# (20 bytes a second: every read gets a byte well within hiredis's 1 s
# timeout, so only a deadline for the whole call ends it).  Queries, eight
# at a time, and /status are answered promptly from the mirror's own
# copy; the log names the timeout once per pause, not once per query.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use POSIX ();
use Time::HiRes qw(time sleep);
use SKTest;
use SKTimeline;
use SKMirror;
use SKLoad;

my $REDIS = redis_or_skip();

my $d = tmpdir();
my $rport = free_port();
my $redis = run_daemon([$REDIS, '--port', $rport, '--bind', '127.0.0.1',
    '--save', '', '--appendonly', 'no', '--dir', $d], "$d/redis.log");
wait_for_port($rport, 10) or die 'redis-server did not start';
my $link = slow_link($rport, 20);

my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $key = ed25519_key($d, 'example');
my $crt = issue($d, $ca, $key, 'example.com', "$d/example");
my ($tt, $ttl) = start_timelines($d, [1, 2],
    [root_entry(cert => "$ca.crt", key => $op),
     bind_entry(name => 'example.com', key => $key, chain => [$crt])]);
my %t = %$tt;
my @tl = @$ttl;
my $m = start_mirror("$d/m", \@tl,
    answer_cache => "redis://127.0.0.1:$link->{port}", query_cache => 600);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 15),
    'both timelines Idle');

# The first answer is short to ask for and store ("$-1", "+OK"); from then
# on Redis holds it, and its kilobytes come back at 20 bytes a second.
my $r = query($m, 'example.com');
is($r->{code}, 200, 'an answer');
ok(wait_until(sub { run_cmd(['redis-cli', '-p', $rport, '--scan',
    '--pattern', 'sk:mirror-answer:*'])->{out} =~ /example\.com/ }, 5),
    '... kept in Redis');

# N requests at once, each on its own connection: [code, secs, body].
sub burst {
    my ($n, $path) = @_;
    my @kids;
    for (1 .. $n) {
        pipe(my $rd, my $wr) or die "pipe: $!";
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            close $rd;
            my $x = timed('GET', "$m->{url}$path", undef, 10);
            my $ok = $x->{code} == 200 && $x->{body} =~ /\A(SK-Mirror|\{)/
                ? 1 : 0;
            print $wr "$x->{code} $x->{secs} $ok\n";
            close $wr;
            POSIX::_exit(0);
        }
        close $wr;
        push @kids, [$pid, $rd];
    }
    my @got;
    for my $k (@kids) {
        my $fh = $k->[1];
        my $line = <$fh> // "599 99 0\n";
        waitpid($k->[0], 0);
        push @got, [split ' ', $line];
    }
    return @got;
}

my ($n, $late, $bad, $worst) = (0, 0, 0, 0);
my $t0 = time;
for my $round (1 .. 4) {
    sleep 1.2 if $round > 1;    # past a pause: Redis is asked again
    for my $x (burst(8, '/query/example.com'), burst(1, '/status')) {
        $n++;
        $bad++ unless $x->[0] == 200 && $x->[2];
        $late++ if $x->[1] > 2.5;
        $worst = $x->[1] if $x->[1] > $worst;
    }
}
is($bad, 0, "Redis dripping: $n requests, each answered");
is($late, 0, '... none waited 2.5 s')
    or diag(sprintf 'worst %.1f s', $worst);
my @lines = slurp($m->{log}) =~ /^.*answer_cache: .*$/mg;
like(join("\n", @lines), qr/GET: timed out after 1000 ms; answers are built fresh/,
    '... the log names the timeout of the whole call');
my $most = 2 + int(log(time - $t0 + 1) / log(2));
ok(@lines >= 1 && @lines <= $most,
    "... once a pause, not once a query (" . @lines . " lines, at most $most)");

stop_daemon($_->{pid}) for $m, $t{1}, $t{2};
kill 'TERM', $link->{pid};
waitpid($link->{pid}, 0);
stop_daemon($redis);
unlike(slurp($m->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
