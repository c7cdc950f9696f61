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
#
# policy-first-contact: answers per second for next hops the policy has
# never seen (an empty PolicyCache, PolicyTTL 0), each looked up at a
# local sk-mirror (real sk-timelines behind it, its answer cache off) and
# checked over STARTTLS, against `sk verify smtp://` of the same names
# with an empty cache, the same number at a time: the names are
# n1.bench.test, n2.bench.test, ..., under bench.test's SK
# (Includes-Subdomains, smtp), whose carrier the destination serves; each
# name's own lookup goes to the mirror, the parent's to the cache after
# the first.  Run on its own: `make bench B=policy-first-contact`
# (bench_policy-first-contact.sh); `make bench B=policy` runs the first
# part.
use strict;
use warnings;
use Time::HiRes qw(time);
use POSIX ();
use SKTest;
use SKPostfix qw(make_cert private_hosts_reexec private_hosts);
use SKSite;

my $build = $ARGV[0] // 'build';     # kept in @ARGV for the re-exec
my $part = $ARGV[1] // 'cached';    # or first-contact
die "bench_policy.pl: no part $part\n" if $part !~ /^(cached|first-contact)$/;
my $fc = $part eq 'first-contact';
# BENCH_POLICY="connections seconds rounds" overrides the defaults.
my ($conns, $secs, $rounds) = split ' ', ($ENV{BENCH_POLICY} // '8 2 3');
# BENCH_POLICY_FIRST="names at-a-time rounds" for policy-first-contact.
my ($nfirst, $cfirst, $rfirst) = split ' ',
    ($ENV{BENCH_POLICY_FIRST} // '30 4 3');
my @first = $fc ? map { "n$_.bench.test" } 1 .. $nfirst : ();
my $bin = "$build/bench/bench_policy";
system('make', '-s', "BUILD=$build", "$build/sk-milter", "$build/sk",
    "$build/sk-timeline", "$build/sk-mirror") == 0
    or die "bench_policy: cannot build sk-milter\n";
my $why = private_hosts_reexec();
die "bench_policy: $why\n" if $why;
my $dir = tmpdir();
chmod 0755, $dir;
$why = private_hosts($dir, 'mx.bench.example', @first);
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
# bench.test's SK on three timelines, a mirror that caches no answer.
my ($w, $wport);
if ($fc) {
    mkdir "$dir/w";
    $w = world("$dir/w", names => { 'bench.test' => 'smtp' },
        subdomains => ['bench.test'], mirror => { query_cache => 0 });
    mkdir "$dir/wild";
    my ($wkey, $wcrt) = make_cert("$dir/wild", 'bench.test');
    $r = sk('carrier', '-k', $w->{sk}{'bench.test'}, '-c', $wcrt, '-n',
        'bench.test', '-s', 'smtp', '-o', "$dir/wild/carrier.pem");
    die "sk carrier: $r->{err}" if $r->{rc};
    spew("$dir/wild/chain.pem", slurp($wkey) . slurp($wcrt)
        . slurp("$dir/wild/carrier.pem"), 0600);
}

mkdir "$dir/dst";
my $dst = SKPostfix->new(dir => "$dir/dst", chain => "$dir/chain.pem",
    nodump => 1);
if ($fc) {
    $wport = free_port();
    $dst->postconf('-M', "127.0.0.1:$wport/inet=127.0.0.1:$wport inet n - "
        . "n - - smtpd -o smtpd_tls_chain_files=$dir/wild/chain.pem");
}
$dst->start;
spew("$dir/trust", "mx.bench.example smtp $dir/sk.key.pub\n");

my @pids;
sub milter {
    my ($name, $ttl, @extra) = @_;
    my ($mport, $pport) = (free_port(), free_port());
    spew("$dir/$name.conf", "Socket inet:$mport\@127.0.0.1\n"
        . "Name mx.src.example\nSyslog no\nTrustFile $dir/trust\n"
        . "PolicySocket inet:$pport\@127.0.0.1\nPolicyTTL $ttl\n"
        . join('', map { "$_\n" } @extra));
    push @pids, run_daemon(["$build/sk-milter", '-f', '-c',
        "$dir/$name.conf"], "$dir/$name.log");
    wait_for_port($pport) or die "sk-milter $name: " . slurp("$dir/$name.log");
    return $pport;
}
my $next = "[mx.bench.example]:$dst->{smtp}";

# bench_policy MODE ARGS...: its answers per second and first reply.
sub bench {
    my ($mode, @args) = @_;
    my $r = run_cmd([$bin, $mode, @args]);
    my ($rate, $reply) = $r->{out} =~ /^answers\/s ([\d.]+) reply (.*)$/m;
    die "bench_policy $mode: $r->{out}$r->{err}" if $r->{rc} || !$reply;
    return ($rate, $reply);
}
sub load {
    my ($port, $c, $s) = @_;
    return bench('load', $port, $next, $c, $s);
}

if (!$fc) {
    my $sk = milter('cached', 3600);
    my $uncached = milter('uncached', 0);
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
    printf "policy answers/s, %d connections: sk-milter cached %d, "
        . "fixed-reply server %d; uncached (STARTTLS + carrier check "
        . "each) %d\n",
        $conns, $best{sk}, $best{fixed}, $slow;
    printf "BENCH policy-cached-vs-fixed %d answers/s ref=%d ratio=%.2f "
        . "target=0.80\n", $best{sk}, $best{fixed},
        $best{fixed} ? $best{sk} / $best{fixed} : 0;
}

# sk verify of every first-contact name, $cfirst at a time: per second.
sub verify_all {
    my ($cache) = @_;
    my $t0 = time;
    my @kids;
    for my $k (0 .. $cfirst - 1) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            for (my $i = $k; $i < @first; $i += $cfirst) {
                my $r = run_cmd([$SKTest::SK, 'verify', '--trust',
                    $w->{trust}, '--cache', $cache,
                    "smtp://$first[$i]:$wport"]);
                if ($r->{rc} != 0) {
                    print STDERR "sk verify $first[$i]: "
                    . "$r->{out}$r->{err}";
                    POSIX::_exit(1);
                }
            }
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    for (@kids) {
        waitpid($_, 0);
        die "bench_policy: sk verify did not accept\n" if $?;
    }
    return @first / (time - $t0);
}

# First contact: the policy against sk verify, fresh caches each round,
# taking turns.
if ($fc) {
    my $first = milter('first', 0, "StapleTrust $w->{trust}",
        "PolicyCache $dir/pcache");
    spew("$dir/first.keys", join('', map { "[$_]:$wport\n" } @first));
    my %fbest = (policy => 0, verify => 0);
    for my $round (1 .. $rfirst) {
        run_cmd(['rm', '-rf', "$dir/pcache", "$dir/vcache"]);
        my ($rate, $reply) = bench('names', $first, $cfirst,
            "$dir/first.keys");
        $reply =~ /OK fingerprint match=/
            or die "sk-milter did not pin a first contact: $reply\n"
                . slurp("$dir/first.log");
        $fbest{policy} = $rate if $rate > $fbest{policy};
        $rate = verify_all("$dir/vcache");
        $fbest{verify} = $rate if $rate > $fbest{verify};
    }
    printf "first contact, %d names, %d at a time: sk-milter policy %.1f "
        . "answers/s, sk verify %.1f/s\n", $nfirst, $cfirst, $fbest{policy},
        $fbest{verify};
    printf "BENCH policy-first-contact %.1f answers/s ref=%.1f ratio=%.2f "
        . "target=0.80\n", $fbest{policy}, $fbest{verify},
        $fbest{verify} ? $fbest{policy} / $fbest{verify} : 0;
}

stop_daemon($_) for @pids;
stop_world($w) if $w;
$dst->stop;
run_cmd(['umount', $_]) for '/etc/hosts', '/etc/resolv.conf';
