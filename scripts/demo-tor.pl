#!/usr/bin/perl
# For the walkthrough: a private Tor network on loopback (t/lib/SKTorNet.pm:
# 3 authorities, 3 relays, nothing leaves the host), the site's onion
# service from HSDIR with the given HiddenServicePort values, and a client.
# Prints "socks PORT" once the onion answers through the client, then runs
# until SIGTERM and stops every tor on the way out.
#   demo-tor.pl HSDIR ONION-ADDRESS VIRTPORT MAP...
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use SKTest;
use SKTorNet;

my ($hsdir, $addr, $vport, @map) = @ARGV;
die "usage: demo-tor.pl HSDIR ONION-ADDRESS VIRTPORT MAP...\n" unless @map;

my $net = SKTorNet->start;
$net->onion($hsdir, @map);
my $socks = $net->client;
$net->wait_onion($addr, $vport)
    or die "demo-tor: $addr:$vport unreachable: " . $net->last_error . "\n";
print "socks $socks\n";
STDOUT->flush;

my $stop = 0;
$SIG{TERM} = $SIG{INT} = sub { $stop = 1 };
sleep 1 until $stop;
$net->stop;
