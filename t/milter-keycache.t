#!/usr/bin/perl
# A sending domain's SK from the KeyCache record (no TrustFile): a Bind
# made with `sk entry bind`, stamped by a real sk-timeline (`sk register`),
# stored as sk:record:example.com in a cache directory and in a private
# redis-server.  Through Postfix: TLS mail gets sk=pass, plaintext
# sk=fail; a record whose SK-Signature was tampered with is not believed
# (sk=none); a dead Redis is a tempfail.  The record's SK also checks a
# client certificate (ClientPolicySocket): its public key comes from the
# record, not from a TrustFile.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKTimeline;
use SKPostfix qw(make_cert);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
plan(skip_all => 'sk-timeline not built') unless -x $SKTimeline::TL;
for (qw(postfix smtp-sink swaks openssl curl redis-server redis-cli)) {
    plan(skip_all => "no $_") unless has_cmd($_);
}

my $d = tmpdir();
chmod 0755, $d;

# A stamped Bind for example.com covering smtp.
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $key = ed25519_key($d, 'example');
issue($d, $ca, $key, 'example.com', "$d/example");
mkdir "$d/tl";
my $t = start_timeline("$d/tl", tid => 7, operator_key => "$d/operator.pub");
ok($t->{up}, 'timeline listens') or BAIL_OUT(slurp($t->{log}));
is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'timeline trusts the test CA');
my $r = sk('entry', 'bind', '-k', $key, '-n', 'example.com',
    '-s', 'smtp,smtps,submission', '-c', "$d/example.crt", '-o', "$d/bind.e");
is($r->{rc}, 0, 'sk entry bind') or diag($r->{err});
$r = sk('register', '-i', "$d/bind.e", '-t', $t->{url});
is($r->{rc}, 0, 'sk register') or diag($r->{out} . $r->{err});
my ($bind) = grep { /^Bind: / && /^Name: example\.com$/m }
    parse_entries(read_log("$d/tl"));
# SN 0 the root CA, SN 1 its batch's Map-Root entry.
like($bind // '', qr/^SN: 2$/m, 'the stamped Bind from the timeline');
stop_daemon($t->{pid});

# The record in a cache directory and in Redis.
mkdir "$d/cache";
mkdir "$d/cache/record";
spew("$d/cache/record/example.com", $bind);
(my $forged = $bind) =~ s/^Services: .*$/Services: smtp,https/m;
mkdir "$d/forged";
mkdir "$d/forged/record";
spew("$d/forged/record/example.com", $forged);
my $rsock = "$d/redis.sock";
my $rpid = run_daemon(['redis-server', '--port', '0', '--unixsocket', $rsock,
    '--save', '', '--appendonly', 'no', '--dir', $d], "$d/redis.log");
ok(wait_until(sub { -S $rsock }, 10), 'redis-server up');
$r = run_cmd(['redis-cli', '-s', $rsock, 'SET', 'sk:record:example.com',
    $bind]);
like($r->{out}, qr/OK/, 'record stored in Redis') or diag($r->{err});

my ($mkey, $mcrt) = make_cert($d, 'mx.example.org');
spew("$d/chain.pem", slurp($mkey) . slurp($mcrt), 0600);
my ($ckey, $ccrt) = make_cert($d, 'client.example.com');
$r = sk('carrier', '-k', $key, '-c', $ccrt, '-n', 'example.com', '-s', 'smtp',
    '-o', "$d/client-carrier.pem");
is($r->{rc}, 0, 'carrier for a client key, by the record\'s SK') or diag($r->{err});
$r = sk('publish', '-a', "$d/client-carrier.pem", '--cache', "$d/cache");
is($r->{rc}, 0, 'published in the cache directory') or diag($r->{err});
my ($xkey, $xcrt) = make_cert($d, 'stranger.example.com');

my ($mport, $cport) = (free_port(), free_port());
my $log = "$d/milter.log";
my $mpid;
sub milter {
    my ($cache) = @_;
    stop_daemon($mpid) if $mpid;
    spew("$d/sk-milter.conf", join('', map { "$_\n" }
        "Socket inet:$mport\@127.0.0.1", 'Name mx.example.org', 'Syslog no',
        "KeyCache $cache", 'LookupTimeout 500',
        "ClientPolicySocket inet:$cport\@127.0.0.1"));
    $mpid = run_daemon([$skm, '-f', '-c', "$d/sk-milter.conf"], $log);
    (wait_for_port($mport) && wait_for_port($cport)) or diag(slurp($log));
}
mkdir "$d/pf";
my $pf = SKPostfix->new(dir => "$d/pf", milter => "inet:127.0.0.1:$mport",
    chain => "$d/chain.pem", main => {
        smtpd_tls_ask_ccert => 'yes',
        smtpd_tls_fingerprint_digest => 'sha256',
        smtpd_data_restrictions =>
            "check_policy_service inet:127.0.0.1:$cport",
    })->start;

sub swaks {
    my ($subj, @args) = @_;
    return run_cmd(['swaks', '--server', '127.0.0.1', '--port', $pf->{smtp},
        '--from', 'alice@example.com', '--to', 'bob@dest.example',
        '--header', "Subject: $subj", '--timeout', '10', @args]);
}
sub got {
    my ($subj) = @_;
    wait_until(sub { grep { /^Subject: \Q$subj\E\r?$/m } $pf->messages }, 15);
    my ($m) = grep { /^Subject: \Q$subj\E\r?$/m } $pf->messages;
    return $m // '';
}

for my $c (["$d/cache", 'directory'], ["unix:$rsock", 'redis']) {
    my ($spec, $name) = @$c;
    milter($spec);
    is(swaks("$name tls", '--tls')->{rc}, 0, "$name: TLS mail accepted");
    is(swaks("$name plain")->{rc}, 0, "$name: plaintext mail accepted");
    like(got("$name tls"), qr/sk=pass \(TLSv1\.[23] for smtp service\)/,
        "$name record: sk=pass over TLS");
    like(got("$name plain"), qr/sk=fail \(plaintext for smtp service\)/,
        "$name record: sk=fail over plaintext");
}

milter("$d/cache");
is(swaks('client ok', '--tls', '--tls-cert', $ccrt, '--tls-key', $ckey)->{rc},
    0, 'client key cross-signed by the record\'s SK: accepted');
is(swaks('client other', '--tls', '--tls-cert', $xcrt, '--tls-key', $xkey)
    ->{rc}, 0, 'another client key: accepted (Mode verify)');
like(got('client ok'), qr/sk=pass \(TLSv1\.[23], client key cross-signed/,
    'record SK: the cross-signed client key passes');
like(got('client other'), qr/sk=fail \(client key not cross-signed/,
    'record SK: another client key fails');

milter("$d/forged");
is(swaks('forged', '--tls')->{rc}, 0, 'forged record: mail accepted');
like(got('forged'), qr/sk=none \(no sovereign key\)/,
    'a record whose signature fails is not believed');

milter("unix:$rsock");
run_cmd(['redis-cli', '-s', $rsock, 'shutdown', 'nosave']);
wait_until(sub { !daemon_alive($rpid) }, 10);
$r = swaks('redis down', '--tls');
like($r->{out}, qr/451 4\.7\.0 sk-milter: sovereign key lookup failed/,
    'dead Redis: tempfail');
ok(daemon_alive($mpid), 'sk-milter still running');
like(slurp($log), qr/sovereign key lookup failed/, 'lookup failure logged');

is(stop_daemon($mpid), 0, 'clean exit');
$pf->stop;
done_testing();
