#!/usr/bin/perl
# Fault: the KeyCache's redis-server stops under sk-milter, then returns.
#
# A sending Postfix (front) relays to the Postfix with the milter (mx),
# whose smtp-sink keeps what it is handed.  While Redis is down: mail from
# a domain the milter must look up in Redis is tempfailed by the mx and
# stays queued at the front (nothing lost); a TrustFile domain is still
# checked; the chain file keeps its carrier; the log names Redis and what
# it kept.  Once Redis is back the milter uses it again without a
# restart: the queued mail is delivered with its verdict.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use SKTest;
use SKPostfix qw(make_cert);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
for (qw(postfix postqueue smtp-sink swaks redis-server redis-cli)) {
    plan(skip_all => "no $_") unless has_cmd($_);
}

my $d = tmpdir();
chmod 0755, $d;

# Redis on a TCP port, saving on shutdown so its data survives a restart.
my $rport = free_port();
my $rlog = "$d/redis.log";
sub redis_start {
    my $pid = run_daemon(['redis-server', '--bind', '127.0.0.1', '--port',
        $rport, '--dir', $d, '--dbfilename', 'dump.rdb', '--save', '',
        '--appendonly', 'no'], $rlog);
    wait_for_port($rport) or die "redis-server did not start: " . slurp($rlog);
    return $pid;
}
sub redis_stop {
    my ($pid) = @_;
    run_cmd(['redis-cli', '-p', $rport, 'shutdown', 'save']);
    wait_until(sub { !daemon_alive($pid) }, 10);
}
my $rpid = redis_start();
my $cache = "redis://127.0.0.1:$rport";

# The mx's key, its carrier in Redis, the chain the milter writes.
my ($key, $crt) = make_cert($d, 'mx.example.org');
my $r = sk('keygen', '-n', 'mx.example.org', '-o', "$d/sk.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 0, 'sk keygen') or diag($r->{err});
$r = sk('carrier', '-k', "$d/sk.key", '-c', $crt, '-n', 'mx.example.org',
    '-s', 'smtp', '-d', '30', '-o', "$d/carrier.pem");
is($r->{rc}, 0, 'sk carrier') or diag($r->{err});
$r = sk('publish', '-a', "$d/carrier.pem", '--cache', $cache);
is($r->{rc}, 0, 'carrier published in Redis') or diag($r->{err});
spew("$d/source.pem", slurp($key) . slurp($crt), 0600);

spew("$d/trust", "example.com smtp\n");
my $mport = free_port();
my $mlog = "$d/milter.log";
spew("$d/sk-milter.conf", join('', map { "$_\n" }
    "Socket inet:$mport\@127.0.0.1", 'Name mx.example.org', 'Syslog no',
    "KeyCache $cache", 'LookupTimeout 500', "TrustFile $d/trust",
    "ChainFile $d/source.pem $d/served.pem", 'PostfixCommand true',
    'RefreshInterval 3600'));
my $mpid = run_daemon([$skm, '-f', '-c', "$d/sk-milter.conf"], $mlog);
ok(wait_for_port($mport), 'milter listens') or diag(slurp($mlog));
ok(wait_for_file("$d/served.pem"), 'chain file written');
my $served = slurp("$d/served.pem");
is(scalar(() = $served =~ /BEGIN CERTIFICATE/g), 2,
    'chain file: leaf and carrier (from Redis)');

mkdir "$d/mx";
my $mx = SKPostfix->new(dir => "$d/mx", milter => "inet:127.0.0.1:$mport",
    chain => "$d/served.pem")->start;
mkdir "$d/front";
my $front = SKPostfix->new(dir => "$d/front", nodump => 1, main => {
    relayhost => "[127.0.0.1]:$mx->{smtp}" })->start;

sub send_mail {
    my ($pf, $from, $subj, @args) = @_;
    return run_cmd(['swaks', '--server', '127.0.0.1', '--port', $pf->{smtp},
        '--from', $from, '--to', 'bob@dest.example',
        '--header', "Subject: $subj", '--timeout', '20', @args]);
}
sub got {
    my ($subj) = @_;
    my ($m) = grep { /^Subject: \Q$subj\E\r?$/m } $mx->messages;
    return $m;
}
sub log_count {
    my ($re) = @_;
    return scalar(() = slurp($mlog) =~ /$re/g);
}

# Redis up: a domain without a record in Redis is sk=none.
is(send_mail($front, 'alice@nosk.example', 'before')->{rc}, 0,
    'Redis up: the front accepts');
ok(wait_until(sub { got('before') }, 30), 'Redis up: delivered')
    or diag($front->log . $mx->log);
like(got('before') // '', qr/sk=none \(no sovereign key\)/,
    'Redis up: looked up in Redis (sk=none)');

# Redis stops.
redis_stop($rpid);
ok(!daemon_alive($rpid), 'redis-server stopped');

is(send_mail($front, 'alice@nosk.example', 'during')->{rc}, 0,
    'Redis down: the front accepts the mail');
ok(wait_until(sub { $front->log =~ /451 4\.7\.0 sk-milter: sovereign key lookup failed, try again later/ }, 30),
    'Redis down: the mx tempfails it (451 4.7.0)') or diag($front->log);
ok(wait_until(sub { $front->queue_count == 1 }, 10),
    'Redis down: the mail stays queued at the front');
ok(!got('during'), 'Redis down: not delivered unchecked');
like(slurp($mlog), qr/sovereign key lookup failed: \Q$cache\E: cannot connect: Connection refused/,
    'Redis down: the log names Redis and why');

$r = send_mail($mx, 'alice@example.com', 'trusted', '--tls');
is($r->{rc}, 0, 'Redis down: a TrustFile domain is still accepted')
    or diag($r->{out});
ok(wait_until(sub { got('trusted') }, 30), 'Redis down: delivered');
like(got('trusted') // '', qr/sk=pass \(TLSv1\.[23] for smtp service\)/,
    'Redis down: the TrustFile domain still checked (sk=pass)');

kill 'HUP', $mpid;
ok(wait_until(sub { log_count(qr/ChainFile .*keeping \Q$d\E\/served\.pem/) }, 20),
    'Redis down: a refresh keeps the chain file, and says so')
    or diag(slurp($mlog));
like(slurp($mlog), qr/ChainFile \Q$d\E\/source\.pem: KeyCache: \Q$cache\E: cannot connect: Connection refused; keeping/,
    'Redis down: the refresh names the KeyCache');
is(slurp("$d/served.pem"), $served, 'Redis down: the carrier is still served');
ok(daemon_alive($mpid), 'Redis down: the milter runs');

# Redis returns: no restart of the milter, the queued mail goes through.
$rpid = redis_start();
$r = run_cmd(['postqueue', '-c', $front->{etc}, '-f']);
is($r->{rc}, 0, 'Redis back: the front flushes its queue');
ok(wait_until(sub { got('during') }, 60),
    'Redis back: the queued mail is delivered') or diag($front->log);
like(got('during') // '', qr/sk=none \(no sovereign key\)/,
    'Redis back: with its verdict from Redis');
ok(wait_until(sub { $front->queue_count == 0 }, 10),
    'Redis back: the front queue is empty');
is(send_mail($front, 'alice@nosk.example', 'after')->{rc}, 0,
    'Redis back: new mail accepted');
ok(wait_until(sub { got('after') }, 30), 'Redis back: new mail delivered');

my $keeping = log_count(qr/keeping \Q$d\E\/served\.pem/);
kill 'HUP', $mpid;
ok(wait_until(sub { log_count(qr/reloaded/) >= 2 }, 20), 'second reload');
sleep 1;
is(log_count(qr/keeping \Q$d\E\/served\.pem/), $keeping,
    'Redis back: the refresh finds the carrier again');
is(slurp("$d/served.pem"), $served, 'Redis back: the chain file unchanged');
is(scalar($mx->messages), 4, 'every message arrived once');

is(stop_daemon($mpid), 0, 'milter: clean exit');
$front->stop;
$mx->stop;
redis_stop($rpid);
done_testing();
