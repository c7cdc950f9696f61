#!/usr/bin/perl
# RSA and ECDSA side by side: two ChainFile lines, one carrier each in the
# KeyCache, Postfix serving both (smtpd_tls_chain_files with two files).
# openssl s_client picking each signature algorithm, over STARTTLS and on
# the 465-style port, sees that key's own carrier after its chain.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKPostfix qw(make_cert);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
plan(skip_all => 'no postfix') unless has_cmd('postfix');

my $dir = tmpdir();
my $cache = "$dir/cache";
mkdir $cache;
my $r = sk('keygen', '-n', 'mx.example.org', '-o', "$dir/sk.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 0, 'sk keygen') or diag($r->{err});

my (%car, %served);
for my $type (qw(rsa ec)) {
    mkdir "$dir/$type";
    my ($key, $crt) = make_cert("$dir/$type", 'mx.example.org', $type);
    $r = sk('carrier', '-k', "$dir/sk.key", '-c', $crt, '-n',
        'mx.example.org', '-s', 'smtp,smtps,submission', '-o',
        "$dir/$type-carrier.pem");
    is($r->{rc}, 0, "$type carrier") or diag($r->{err});
    $r = sk('publish', '-a', "$dir/$type-carrier.pem", '--cache', $cache);
    is($r->{rc}, 0, "$type carrier published") or diag($r->{err});
    ($car{$type}) = slurp("$dir/$type-carrier.pem")
        =~ /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----)/s;
    spew("$dir/$type-source.pem", slurp($key) . slurp($crt), 0600);
    spew("$dir/$type-served.pem", slurp($key) . slurp($crt), 0600);
    $served{$type} = "$dir/$type-served.pem";
}

my $pf = SKPostfix->new(dir => $dir,
    chain => "$served{rsa}, $served{ec}")->start;
my $mport = free_port();
spew("$dir/sk-milter.conf", join('', map { "$_\n" }
    "Socket inet:$mport\@127.0.0.1", 'Name mx.example.org', 'Syslog no',
    "KeyCache $cache",
    "ChainFile $dir/rsa-source.pem $served{rsa}",
    "ChainFile $dir/ec-source.pem $served{ec}",
    "PostfixCommand postfix -c $pf->{etc} reload",
    "Probe starttls 127.0.0.1:$pf->{smtp}"));
my $log = "$dir/milter.log";
my $mpid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
ok(wait_until(sub { -e $log && slurp($log) =~ /probe starttls .*carrier served/ }, 20),
    'both chains written, Postfix reloaded, probed') or diag(slurp($log));
like(slurp($log), qr/rsa-source\.pem: wrote .* with its carrier/, 'RSA chain written');
like(slurp($log), qr/ec-source\.pem: wrote .* with its carrier/, 'ECDSA chain written');

my %sigalgs = (rsa => 'rsa_pss_rsae_sha256:RSA+SHA256',
    ec => 'ecdsa_secp256r1_sha256');
for my $port (['starttls', $pf->{smtp}], ['465', $pf->{smtps}]) {
    my ($how, $p) = @$port;
    for my $type (qw(rsa ec)) {
        my $out = run_cmd(['openssl', 's_client', '-connect', "127.0.0.1:$p",
            $how eq 'starttls' ? ('-starttls', 'smtp') : (),
            '-sigalgs', $sigalgs{$type}, '-showcerts'])->{out};
        my @certs = $out =~
            /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----)/sg;
        is(scalar @certs, 2, "$how, $type: leaf and carrier") or diag($out);
        is($certs[-1], $car{$type}, "$how, $type: its own carrier");
        like($out, $type eq 'rsa' ? qr/Peer signature type: RSA/
            : qr/Peer signature type: ECDSA/, "$how, $type: that key signed");
    }
}

is(stop_daemon($mpid), 0, 'clean exit');
$pf->stop;
done_testing();
