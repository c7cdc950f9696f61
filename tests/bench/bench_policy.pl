#!/usr/bin/perl
# smtp_tls_policy_maps answers per second from sk-milter's PolicySocket
# for a cached next hop (an SK-pinned destination, verified once over
# STARTTLS against a private Postfix serving a carrier), against the
# reference measured in the same run: a socketmap server that answers the
# same reply with no lookup at all (bench_policy fixed).  Both take turns
# over several rounds with the same load (persistent connections, as
# Postfix's smtp processes keep them); each keeps its best round.  The
# uncached cost (one STARTTLS handshake and carrier check per answer,
# PolicyTTL 0) is printed for information.
use strict;
use warnings;
use SKTest;
use SKPostfix qw(make_cert private_hosts_reexec private_hosts);

my $build = $ARGV[0] // 'build';     # kept in @ARGV for the re-exec
# BENCH_POLICY="connections seconds rounds" overrides the defaults.
my ($conns, $secs, $rounds) = split ' ', ($ENV{BENCH_POLICY} // '8 2 3');
my $bin = "$build/bench/bench_policy";
system('make', '-s', "BUILD=$build", "$build/sk-milter", "$build/sk") == 0
    or die "bench_policy: cannot build sk-milter\n";
my $why = private_hosts_reexec();
die "bench_policy: $why\n" if $why;
my $dir = tmpdir();
chmod 0755, $dir;
$why = private_hosts($dir, 'mx.bench.example');
die "bench_policy: $why\n" if $why;
$SKTest::SK = "$build/sk" if -x "$build/sk";

my $r = sk('keygen', '-n', 'mx.bench.example', '-o', "$dir/sk.key",
    '--no-backups-i-accept-the-risk');
die "sk keygen: $r->{err}" if $r->{rc};
my ($key, $crt) = make_cert($dir, 'mx.bench.example');
$r = sk('carrier', '-k', "$dir/sk.key", '-c', $crt, '-n', 'mx.bench.example',
    '-s', 'smtp', '-o', "$dir/carrier.pem");
die "sk carrier: $r->{err}" if $r->{rc};
spew("$dir/chain.pem", slurp($key) . slurp($crt) . slurp("$dir/carrier.pem"),
    0600);
mkdir "$dir/dst";
my $dst = SKPostfix->new(dir => "$dir/dst", chain => "$dir/chain.pem",
    nodump => 1)->start;
spew("$dir/trust", "mx.bench.example smtp $dir/sk.key.pub\n");

my @pids;
sub milter {
    my ($name, $ttl) = @_;
    my ($mport, $pport) = (free_port(), free_port());
    spew("$dir/$name.conf", "Socket inet:$mport\@127.0.0.1\n"
        . "Name mx.src.example\nSyslog no\nTrustFile $dir/trust\n"
        . "PolicySocket inet:$pport\@127.0.0.1\nPolicyTTL $ttl\n");
    push @pids, run_daemon(["$build/sk-milter", '-f', '-c',
        "$dir/$name.conf"], "$dir/$name.log");
    wait_for_port($pport) or die "sk-milter $name: " . slurp("$dir/$name.log");
    return $pport;
}
my $sk = milter('cached', 3600);
my $uncached = milter('uncached', 0);
my $next = "[mx.bench.example]:$dst->{smtp}";

sub load {
    my ($port, $c, $s) = @_;
    my $r = run_cmd([$bin, 'load', $port, $next, $c, $s]);
    die "bench_policy load: $r->{err}" if $r->{rc};
    my ($rate, $reply) = $r->{out} =~ /^answers\/s (\d+) reply (.*)$/m
        or die "bench_policy load: $r->{out}";
    return ($rate, $reply);
}

my (undef, $reply) = load($sk, 1, 0.2);         # verify once, then cached
$reply =~ /^\d+:(OK fingerprint match=[0-9a-f:]+),$/
    or die "sk-milter did not pin: $reply\n" . slurp("$dir/cached.log");
my $answer = $1;
my $ref = free_port();
push @pids, run_daemon([$bin, 'fixed', $ref, $answer], "$dir/fixed.log");
wait_for_port($ref) or die 'fixed server did not start';

my %best = (sk => 0, fixed => 0);
for (1 .. $rounds) {
    for my $t (['sk', $sk], ['fixed', $ref]) {
        my ($rate, $got) = load($t->[1], $conns, $secs);
        die "different replies: $got" if $got !~ /\Q$answer\E/;
        $best{ $t->[0] } = $rate if $rate > $best{ $t->[0] };
    }
}
my ($slow) = load($uncached, 1, $secs);
printf "policy answers/s, %d connections: sk-milter cached %d, fixed-reply "
    . "server %d; uncached (STARTTLS + carrier check each) %d\n",
    $conns, $best{sk}, $best{fixed}, $slow;
printf "BENCH policy-cached-vs-fixed %d answers/s ref=%d ratio=%.2f "
    . "target=0.80\n", $best{sk}, $best{fixed},
    $best{fixed} ? $best{sk} / $best{fixed} : 0;

stop_daemon($_) for @pids;
$dst->stop;
run_cmd(['umount', $_]) for '/etc/hosts', '/etc/resolv.conf';
