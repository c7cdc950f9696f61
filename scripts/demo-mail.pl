#!/usr/bin/perl
# For the walkthrough: a private Postfix on loopback ports with sk-milter
# keeping its chain file stapled from the key-material cache, as
# docs/postfix.md sets it up.  Prints "smtp PORT smtps PORT" once the
# milter's own probe saw the carrier served, then runs until SIGTERM and
# stops both on the way out.
#   demo-mail.pl DIR NAME SOURCE-PEM CACHE-DIR
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use SKTest;
use SKPostfix;

my ($dir, $name, $source, $cache) = @ARGV;
die "usage: demo-mail.pl DIR NAME SOURCE-PEM CACHE-DIR\n" unless defined $cache;
my $skm = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';

spew("$dir/served.pem", slurp($source), 0600);
my $pf = SKPostfix->new(dir => $dir, chain => "$dir/served.pem",
    main => { myhostname => $name });
$pf->start;
my $mport = free_port();
spew("$dir/sk-milter.conf", join('', map { "$_\n" }
    "Socket inet:$mport\@127.0.0.1", "Name $name", 'Syslog no',
    "KeyCache $cache", "ChainFile $source $dir/served.pem",
    "PostfixCommand postfix -c $pf->{etc} reload",
    "Probe starttls 127.0.0.1:$pf->{smtp}",
    "Probe tls 127.0.0.1:$pf->{smtps}", 'RefreshInterval 5'));
my $log = "$dir/sk-milter.log";
my $pid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
wait_until(sub { -e $log && slurp($log) =~ /probe tls .*carrier served/ }, 30)
    or die "sk-milter: no carrier served:\n" . (-e $log ? slurp($log) : '');
print "smtp $pf->{smtp} smtps $pf->{smtps}\n";
STDOUT->flush;

my $stop = 0;
$SIG{TERM} = $SIG{INT} = sub { $stop = 1 };
sleep 1 until $stop;
stop_daemon($pid);
$pf->stop;
