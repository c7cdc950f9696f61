#!/usr/bin/perl
# Inbound client certificates: Postfix hands a milter no client key, so
# sk-milter's ClientPolicySocket (SMTPD policy delegation, asked at DATA)
# notes ccert_pubkey_fingerprint per queue id and the milter checks it at
# end of message.  From a domain whose SK covers smtp: a client key the SK
# cross-signs (its carrier in the KeyCache) gives sk=pass, another key
# sk=fail, and Mode reject refuses it with 5.7.1; no certificate keeps
# the plain TLS pass.  Garbage on the policy socket is dropped.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use SKTest;
use SKPostfix qw(make_cert);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
for (qw(postfix smtp-sink swaks)) {
    plan(skip_all => "no $_") unless has_cmd($_);
}

my $dir = tmpdir();
my $cache = "$dir/cache";
mkdir $cache;
my $r = sk('keygen', '-n', 'example.com', '-o', "$dir/sk.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 0, 'sk keygen') or diag($r->{err});
my ($key, $crt) = make_cert($dir, 'mx.example.org');
spew("$dir/chain.pem", slurp($key) . slurp($crt), 0600);
my ($ckey, $ccrt) = make_cert($dir, 'client.example.com');
my ($xkey, $xcrt) = make_cert($dir, 'stranger.example.com');
$r = sk('carrier', '-k', "$dir/sk.key", '-c', $ccrt, '-n', 'example.com',
    '-s', 'smtp', '-o', "$dir/client-carrier.pem");
is($r->{rc}, 0, 'carrier for the client key') or diag($r->{err});
$r = sk('publish', '-a', "$dir/client-carrier.pem", '--cache', $cache);
is($r->{rc}, 0, 'published') or diag($r->{err});
spew("$dir/trust", "example.com smtp,smtps,submission $dir/sk.key.pub\n");

my ($mport, $cport) = (free_port(), free_port());
sub milter_conf {
    my ($mode) = @_;
    spew("$dir/sk-milter.conf", join('', map { "$_\n" }
        "Socket inet:$mport\@127.0.0.1", 'Name mx.example.org', 'Syslog no',
        "TrustFile $dir/trust", "KeyCache $cache",
        "ClientPolicySocket inet:$cport\@127.0.0.1", "Mode $mode"));
}
milter_conf('verify');
my $log = "$dir/milter.log";
my $mpid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
ok(wait_for_port($mport) && wait_for_port($cport), 'milter and policy listen')
    or diag(slurp($log));

my $pf = SKPostfix->new(dir => $dir, milter => "inet:127.0.0.1:$mport",
    chain => "$dir/chain.pem", main => {
        smtpd_tls_ask_ccert => 'yes',
        smtpd_tls_fingerprint_digest => 'sha256',
        smtpd_data_restrictions =>
            "check_policy_service inet:127.0.0.1:$cport",
    })->start;

sub swaks {
    my ($subj, @args) = @_;
    return run_cmd(['swaks', '--server', '127.0.0.1', '--port', $pf->{smtp},
        '--from', 'alice@example.com', '--to', 'bob@dest.example',
        '--tls', '--header', "Subject: $subj", '--timeout', '10', @args]);
}
$r = swaks('cross-signed', '--tls-cert', $ccrt, '--tls-key', $ckey);
is($r->{rc}, 0, 'client key cross-signed: accepted') or diag($r->{out});
$r = swaks('stranger', '--tls-cert', $xcrt, '--tls-key', $xkey);
is($r->{rc}, 0, 'another client key: accepted in Mode verify')
    or diag($r->{out});
$r = swaks('no cert');
is($r->{rc}, 0, 'no client certificate');
ok($pf->wait_messages(3), 'three delivered') or diag($pf->log);
my %m = map { /^Subject: (.*?)\r?$/m ? ($1 => $_) : () } $pf->messages;
like($m{'cross-signed'} // '', qr/sk=pass \(TLSv1\.[23], client key cross-signed, for smtp service\)/,
    'sk=pass for the cross-signed client key');
like($m{stranger} // '', qr/sk=fail \(client key not cross-signed by the sovereign key\)/,
    'sk=fail for a client key the SK does not cross-sign');
like($m{'no cert'} // '', qr/sk=pass \(TLSv1\.[23] for smtp service\)/,
    'no client certificate: the TLS pass');

milter_conf('reject');
kill 'HUP', $mpid;
ok(wait_until(sub { slurp($log) =~ /reloaded/ }), 'reloaded in Mode reject');
$r = swaks('stranger 2', '--tls-cert', $xcrt, '--tls-key', $xkey);
like($r->{out}, qr/550 5\.7\.1 sk-milter: sovereign key policy: client key not cross-signed/,
    'Mode reject: 5.7.1 names the reason');
$r = swaks('cross-signed 2', '--tls-cert', $ccrt, '--tls-key', $ckey);
is($r->{rc}, 0, 'Mode reject: the cross-signed key is accepted');

# Garbage on the policy socket: closed, logged, the daemon lives on.
my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$cport", Timeout => 5);
print $s "no equals sign here\n\n";
shutdown($s, 1);
my $got = do { local $/; <$s> } // '';
is($got, '', 'malformed policy request: closed without an answer');
$s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$cport", Timeout => 5);
print $s 'x=' . ('y' x 20000);
shutdown($s, 1);
$got = do { local $/; <$s> } // '';
is($got, '', 'over-long policy request: closed');
$s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$cport", Timeout => 5);
print $s "request=smtpd_access_policy\nqueue_id=\n\nrequest=x\n\n";
shutdown($s, 1);
$got = do { local $/; <$s> } // '';
is($got, "action=DUNNO\n\naction=DUNNO\n\n", 'two requests, two DUNNO');
like(slurp($log), qr/ClientPolicySocket: malformed request \(a line is not name=value\)/,
    'garbage logged');
ok(daemon_alive($mpid), 'sk-milter still running');

is(stop_daemon($mpid), 0, 'clean exit');
$pf->stop;
done_testing();
