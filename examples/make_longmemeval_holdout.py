"""Write ``examples/longmemeval_holdout.json``: a held-out LongMemEval-style test set.

This is a second, independent evaluation set for memstrata, kept apart from the
development set (``examples/longmemeval_dev.json``). It was written blind: its
author did not look at or run memstrata's retrieval, keyword or summarisation
code while writing it, and did not tune it to make any system score well or
badly. Use it to check that changes tuned on the dev set generalise, and do not
tune against it.

Every conversation, question and answer here was invented for this file; nothing
is copied from LongMemEval or from any other dataset. The set uses the same
record schema and the same generator machinery as the dev set: it imports
``make_longmemeval_dev`` (in this folder) for the message text format, the
``Evidence``/``Spec`` classes, haystack building and validation. Only the
content is new: 36 new questions (``lmh-001`` ... ``lmh-036``), six per question
type, three of them abstention questions (ids ending in ``_abs``), their
evidence sessions, and a pool of new filler chats (ids starting ``h-``). Each
haystack holds the question's evidence sessions plus filler sessions drawn from
the union of the dev set's filler pool and the new one, minus fillers whose
personal facts could contradict the answer. Evidence session ids start with
``h-`` (``h-007a-travel``) so that they never clash with the dev set's.

The output is deterministic: the same seed gives byte-identical JSON. The
default seed differs from the dev set's.

Usage::

    python examples/make_longmemeval_holdout.py [--output PATH] [--seed N]
    memstrata eval retrieval --dataset examples/longmemeval_holdout.json --format longmemeval

See ``make_longmemeval_dev.py`` for the text format of the conversations below.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_longmemeval_dev as base
from make_longmemeval_dev import Evidence, Spec

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "longmemeval_holdout.json"
DEFAULT_SEED = 20241105

# ---------------------------------------------------------------------------
# New filler chats. Tags name the kinds of personal facts each chat states.
# ---------------------------------------------------------------------------

FILLER_TEXT = r"""
=== h-cooking-01 | food
U: I'm making mushroom risotto for four friends on Friday. I've got an induction hob and a wide sauté pan rather than a proper risotto pot. Will that work?
A: A wide sauté pan is actually a good choice for risotto, because the larger surface lets the stock reduce evenly and the rice cooks in a shallow layer. Induction is fine too; it responds quickly, so you can drop the heat the moment the pan gets too lively. Keep the stock hot in a separate pot next to it, add it one ladle at a time, and stir often but not constantly. For four people, about 320 grams of arborio or carnaroli rice and roughly 1.2 liters of stock is a good starting amount.
U: Can I do any of it ahead so I'm not stuck stirring while they're there?
A: Restaurants par-cook risotto, and you can too. Cook it about two thirds of the way, until the rice is still chalky in the centre, then spread it on a tray to cool quickly and refrigerate it. When your guests arrive, return it to the pan with hot stock and finish it in eight to ten minutes. Fry the mushrooms separately in a very hot pan so they brown properly, and fold them in at the end with butter and parmesan.
U: Which mushrooms give the most flavour?
A: A mix works best. Chestnut or cremini mushrooms give body, and a small handful of dried porcini, soaked in hot water for 20 minutes, adds deep savoury flavour; strain the soaking liquid and add it to the stock. Oyster or shiitake mushrooms bring texture if you can find them. Season the mushrooms only at the end of frying, since salt draws out water and stops them browning.

=== h-cooking-02 | food, kids
U: I have twin toddlers and zero time in the evenings. Which soups freeze well so I can batch cook on Sundays?
A: Most blended and bean-based soups freeze very well. Good candidates include lentil and carrot, minestrone without the pasta, butternut squash, split pea, chicken and vegetable, and black bean soup. Freeze them in portion-sized containers or flat in freezer bags, which stack neatly and thaw much faster. Leave a little headspace, since liquids expand as they freeze, and label each bag with the name and date. Most soups keep their quality for about three months in the freezer.
U: Which ones don't freeze well? I don't want to waste a whole batch.
A: Soups with lots of cream or milk can separate and turn grainy when thawed, so freeze the base and stir in the dairy when reheating. Potatoes in chunks tend to go mealy, although blended potato soups are fine. Pasta and rice keep absorbing liquid and turn mushy, so cook them fresh and add them when serving. Delicate herbs are also best added after reheating, since freezing turns them dark and limp.
U: And is it safe to give the toddlers reheated soup?
A: Yes, as long as it has been cooled, frozen and reheated properly. Thaw it in the fridge overnight or gently in a pan, bring it to a steaming simmer all the way through, then let it cool to a safe temperature before serving. Only reheat each portion once, and stir well if you use a microwave, because it can leave very hot spots. Check the temperature with a clean spoon before it goes in the bowls.

=== h-cooking-03 | food
U: My neighbour gave me a huge bag of cucumbers from her greenhouse. Can I make quick pickles without any canning equipment?
A: Yes, refrigerator pickles need nothing more than a clean jar and a fridge. Slice the cucumbers into spears or rounds, pack them into the jar with garlic, dill and a few peppercorns, then pour over a hot brine of equal parts vinegar and water with about a tablespoon of salt and a tablespoon of sugar per 500 milliliters. Let them cool, close the lid and refrigerate. They are good to eat after 24 hours and better after three days.
U: How long will they keep?
A: Refrigerator pickles usually keep well for about a month, as long as the cucumbers stay submerged in the brine and you use a clean fork to take them out. They gradually soften over time, so the first couple of weeks are the best for crunch. Throw them away if you see mould, a slimy texture or an off smell, and do not top up an old jar with fresh cucumbers.
U: Any way to keep them crunchier?
A: Trim off the blossom end of each cucumber, since it contains enzymes that soften the flesh. Use the firmest, freshest cucumbers you have, and soak the slices in ice water for an hour before packing them. Adding a grape leaf, a bay leaf or a black tea bag to the jar provides tannins that help keep them crisp. Thicker spears also stay crunchy longer than thin rounds.

=== h-cooking-04 | food
U: I want to try making a chicken curry from scratch, but I'm honestly a wimp with chilli. How do I get lots of flavour without the heat?
A: Flavour in a curry comes mostly from aromatics and spices that are not hot at all. Cook the onions slowly until deep golden, then add plenty of garlic and ginger, and bloom ground cumin, coriander, turmeric and a little garam masala in the oil. Kashmiri chilli powder gives a beautiful red colour with very little heat, so it is a good substitute for regular chilli powder. Tomatoes, yogurt or coconut milk add body, and a squeeze of lemon at the end brightens everything.
U: Whole spices or ground?
A: Both have a place. Whole spices such as cinnamon sticks, cardamom pods, cloves and bay leaves are fried in the oil at the start to perfume it, and they give a gentle, rounded background flavour. Ground spices go in after the onions and cook for a minute until fragrant. If you only buy a few things, start with ground cumin, coriander, turmeric and garam masala, plus cardamom pods, since those cover most everyday curries.
U: What should I serve with it?
A: Basmati rice is the classic, and rinsing it until the water runs clear gives fluffy, separate grains. Warm naan or chapati is great for scooping up the sauce. A cooling cucumber raita, made with yogurt, grated cucumber, mint and a pinch of cumin, balances the spices nicely. A simple salad of sliced onion, tomato and lemon juice adds freshness and crunch.

=== h-travel-01 | travel
U: My friend and I are doing two weeks of Interrail in Italy in September. Is it worth reserving seats on the fast trains or can we just hop on?
A: On Italy's high-speed Frecciarossa and Italo trains, seat reservations are compulsory, even with an Interrail pass, so you cannot just hop on. Reservations for pass holders cost a few euros each and can sell out on popular routes, especially on Fridays and Sundays, so book the main legs a week or two ahead. Regional trains do not need reservations, and they are a good, cheap option for shorter hops such as Florence to Pisa or Lucca.
U: Which cities would you prioritise in two weeks?
A: A balanced route could be Milan, then Lake Como for a day or two, Venice, Bologna, Florence with a day trip to Siena, and finally Rome. That gives you a mix of big sights, food cities and some scenery without spending every day on a train. If you prefer the coast, swap Milan for the Cinque Terre, reached by regional train from La Spezia. Try to stay at least two nights in each place so you are not constantly packing.
U: Any tips for saving money on food?
A: Eat your main meal at lunchtime, when many trattorias offer a fixed-price menu. Bakeries and markets are perfect for cheap picnics, and a slice of pizza al taglio makes a filling snack. Avoid restaurants right next to major sights with menus in several languages. Standing at the bar for coffee is cheaper than sitting at a table, and refilling a bottle at public fountains saves money on water.

=== h-travel-02 | travel, partner
U: My husband and I are thinking of renting a campervan in New Zealand's South Island for three weeks. Is that a good way to see it?
A: It is one of the most popular ways to travel the South Island, and it suits the long scenic drives and the freedom to stop wherever the views are good. Book early for the summer season, from December to February, when vans get expensive and scarce. A self-contained van with a toilet gives you more freedom-camping options, although the rules vary by district and many areas require certified vehicles. Holiday parks with showers, kitchens and power are plentiful if you prefer a bit more comfort.
U: What's a rough route for three weeks?
A: A loop from Christchurch works nicely. Head north to Kaikoura, then across to the Abel Tasman coast and down the wild West Coast past the glaciers. Cross Haast Pass to Wanaka and Queenstown, take a day trip or an overnight cruise to Milford Sound, then return via Lake Tekapo and Aoraki Mount Cook. Three weeks lets you add a couple of slower days for walks without driving every day.
U: Is driving on the left going to be a problem?
A: Most people adapt within a day or two. Take it slowly at first, keep your left shoulder near the road edge, and be extra careful when turning and at roundabouts, where traffic gives way to the right. Many rural roads are narrow and winding, and one-lane bridges are common, so watch for the give-way signs. Plan shorter driving days at the start while you get used to the size of the van.

=== h-fitness-01 | fitness, swim
U: I'm an adult trying to learn front crawl and I get completely out of breath after one length. I think my breathing is wrong. Help?
A: That is the most common problem for adults learning front crawl, and it is almost always about breathing out. Many beginners hold their breath underwater and then try to exhale and inhale in the short moment their face is out, which leaves them starved of air. Instead, breathe out steadily through your nose and mouth while your face is in the water, so you only need to inhale when you turn. Practise at the wall first, blowing bubbles and turning to breathe, before adding the arms.
U: I also feel like my legs sink.
A: Sinking legs usually come from lifting the head to breathe or to look forward. Keep your eyes on the bottom of the pool, with the water roughly at your hairline, and press your chest gently down, which lifts the hips. Kick from the hips with fairly straight legs and relaxed ankles, rather than bending at the knees. A pull buoy between the thighs in some drills lets you feel the right body position.
U: How often should I practise?
A: Two or three short sessions a week will bring faster progress than one long one, because technique is learned through repetition while you are fresh. Spend most of each session on drills and short lengths with rest, rather than struggling through long swims with poor form. A few sessions with a coach can help a lot, because they can spot things you cannot feel yourself.

=== h-fitness-02 | fitness, health
U: I started walking about 12,000 steps a day in the spring and now the bottom of my heel hurts first thing in the morning. What's going on?
A: Heel pain that is worst with the first steps in the morning is a classic sign of plantar fasciitis, irritation of the thick band of tissue under the foot. It often appears after a sudden increase in walking or standing, especially in worn or unsupportive shoes. It usually improves with some changes: reduce your daily steps for a while, avoid walking barefoot on hard floors, and wear shoes with good arch support and cushioning. See a doctor or physiotherapist if it does not improve within a few weeks.
U: Are there stretches that help?
A: Yes. Before getting out of bed, pull your toes back toward your shin for 30 seconds a few times, which eases that painful first step. Calf stretches against a wall, with the back knee straight and then bent, help because tight calves increase the strain on the heel. Rolling the sole of your foot over a frozen water bottle for a few minutes in the evening can reduce pain too.
U: Should I stop walking altogether?
A: Usually not. Cut back to a level that does not make the pain worse the next morning, and swap some walking for low-impact activity such as cycling or swimming while it settles. Then build your steps back up gradually, by about ten percent a week, and replace your shoes if the soles are worn down. Most cases settle within a few months with these steps.

=== h-money-01 | finance, job
U: My employer puts 5 percent of my salary into a workplace pension and matches anything extra I add, up to 3 percent more. Is it worth paying in extra?
A: Usually yes. An employer match is effectively an instant return on your contribution, and it is hard to find that anywhere else. If you can afford to pay in the extra amount that earns the full match, most people benefit from doing so, especially since pension contributions often come with tax relief too. It makes sense to keep an emergency fund and clear expensive debt first, but after that, capturing the full match is usually one of the best uses of spare money.
U: What about investing on my own as well, like in index funds?
A: Once you have the match and an emergency fund, a low-cost global index fund is a simple way to invest more. It spreads your money over thousands of companies, so you do not need to pick winners. Look for low ongoing charges, invest a fixed amount every month, and leave it alone for the long term. Use any tax-advantaged account available to you before a regular taxable account.
U: How do I check what my pension is actually invested in?
A: Log in to your pension provider's website or app, where you should see the fund your money is in and its fact sheet. The default fund is often a mixed fund that becomes more cautious as you approach retirement. Check the charges and how much is in shares versus bonds. If you are decades from retirement, you may prefer a higher-growth option, since you have time to ride out market falls.

=== h-money-02 | budget, housing
U: I live with three housemates and splitting the bills is turning into a mess. Energy, internet, the streaming subscriptions... What's the fairest way to handle it?
A: The simplest fair approach is to split shared bills equally and agree in advance on anything that is not shared. Put all the shared bills in a list with amounts and due dates, decide who pays each one, and settle up once a month. A bill-splitting app can track who owes what automatically, which avoids awkward reminders. For subscriptions that not everyone uses, let only the people who use them pay, and review the list every few months.
U: One housemate works from home and uses a lot more heating. Should she pay more?
A: It is reasonable to raise it, but keep it simple and friendly. Some households agree on a small fixed top-up from the person who is home most, especially in winter, rather than trying to measure usage precisely. Others accept that usage evens out in other ways, such as someone who cooks more or showers longer. Have the conversation before the winter bills arrive, and frame it around fairness for everyone rather than blaming one person.
U: Should we have a joint account?
A: A joint household account can work well: everyone pays the same monthly amount into it and all shared bills come out by direct debit. It reduces the number of transfers and reminders. The downside is that everyone named on it can be affected if something goes wrong, so many housemates prefer using an app instead, or one person paying the bills with automatic monthly repayments from the others.

=== h-tech-01 | tech, house
U: Our house has three floors and the wifi is terrible in the loft bedroom. The router is in the hallway on the ground floor. What should I do?
A: Houses with several floors are exactly where a single router struggles, because the signal gets weaker through each floor and wall. A mesh wifi system is usually the best fix: you replace or supplement the router with two or three units that talk to each other and create one network throughout the house. Place one unit near the router and another on the middle floor, roughly halfway to the loft, rather than right next to the weak spot.
U: Is a cheap wifi extender good enough?
A: An extender can help in a small dead zone, but it often halves the speed and may create a separate network name that your devices do not switch to smoothly. If you only need basic browsing in one room, it can be fine. For streaming, video calls or gaming in the loft, a mesh system or a wired solution is more reliable.
U: What do you mean by a wired solution?
A: You can run an Ethernet cable to the loft and put a second access point there, which gives the best speed and reliability. If running cables is not practical, powerline adapters send the network through your electrical wiring: plug one in near the router and one in the loft, then connect a wifi access point or a computer. Results depend on the wiring, so buy from a shop with an easy return policy.

=== h-tech-02 | tech
U: My laptop is from 2017 and it takes forever to start up and open a browser. Is it worth trying to speed it up or should I just buy a new one?
A: It is worth trying a few things first, because many older laptops feel slow mainly because of the storage drive and background software. If it still has a spinning hard drive, replacing it with a solid-state drive is the biggest upgrade you can make and is often inexpensive. Check how much memory it has; 8 GB is a sensible minimum for modern browsing. Disable unnecessary startup programs, uninstall software you do not use, and make sure the system is up to date.
U: How do I know if it has a hard drive or an SSD?
A: On Windows, open Task Manager, go to the Performance tab and click on the disk; it will say HDD or SSD. You can also open the Defragment and Optimize Drives tool, which lists the media type for each drive. Alternatively, look up the exact model number on the sticker underneath the laptop to find its specifications online. Knowing this first saves you from buying the wrong upgrade.
U: It says HDD. Is swapping it hard?
A: On many laptops from that era it is a straightforward job with a small screwdriver: remove the bottom panel, unscrew the drive, and slide in the new one. Search for a guide or video for your exact model first. You can clone the old drive to the new SSD with a USB adapter and cloning software, or do a fresh install of the operating system, which often feels even faster.

=== h-tech-03 | tech, job
U: At work I track our warehouse inventory in Excel. I have product codes in one sheet and prices in another. What's the best formula to pull the price across?
A: If you have a recent version of Excel, XLOOKUP is the easiest and most flexible option. In the cell next to your first product code, use something like =XLOOKUP(A2, Prices!A:A, Prices!B:B, "Not found"), where A2 is the product code, Prices!A:A holds the codes on the price sheet and Prices!B:B holds the prices. The last argument shows a friendly message instead of an error when a code is missing. Then fill the formula down the column.
U: Some of the codes have spaces at the end and don't match.
A: Trailing spaces are a common cause of failed lookups. Wrap the lookup value in TRIM, for example =XLOOKUP(TRIM(A2), Prices!A:A, Prices!B:B, "Not found"). If the spaces are on the price sheet instead, clean that column once with a helper column using TRIM, then paste it back as values. Codes stored as numbers on one sheet and as text on the other also cause mismatches, so check the cell format too.
U: Can I highlight products that are running low?
A: Yes, use conditional formatting. Select the stock column, go to Conditional Formatting, choose New Rule, and use a formula such as =C2<10 with a red fill. If the reorder level differs per product, keep it in its own column and compare against that, for example =C2<D2. This way the sheet highlights anything that needs reordering as soon as the numbers change.

=== h-tech-04 | tech, photo
U: My iPhone keeps saying storage is full and most of it is photos and videos. How can I free up space without losing them?
A: The safest approach is to make sure everything is backed up before deleting anything. Turn on a cloud photo service such as iCloud Photos or Google Photos and wait until it confirms the upload is complete. On iPhone, the Optimize iPhone Storage setting keeps smaller versions on the phone and full-resolution originals in iCloud, which often frees a lot of space. Also copy your library to a computer or external drive now and then, so you have a second copy.
U: Videos seem to be the biggest problem.
A: Videos take up far more space than photos, especially 4K at 60 frames per second. In the camera settings you can record at 1080p for everyday clips, which uses a fraction of the space. Sort your library by size in a storage app or on a computer to find the biggest files, and delete long accidental recordings, duplicates and screen recordings you no longer need.
U: And the Recently Deleted album?
A: Photos you delete go to Recently Deleted and stay there for about 30 days, still using storage. Once you are sure your backups are complete, you can empty that album to reclaim the space immediately. It is worth checking it before emptying, in case something you wanted slipped in by mistake. Some people also keep a separate album of favourites, so it is quick to check that the most important pictures made it into the backup.

=== h-parenting-01 | kids
U: My daughter is twelve and says she's the only one in her class without a smartphone. Is twelve too young?
A: There is no single right age, and many families decide somewhere between eleven and fourteen, often around the move to secondary school. The question is less about age and more about readiness and rules. Consider whether she needs a phone for getting to school or staying in touch, how she handles responsibility now, and which features she actually needs. Some parents start with a basic phone for calls and messages, then move to a smartphone later.
U: If we do get one, what rules should we set?
A: Agree on rules together before she gets it, and write them down. Common ones include phones charging outside the bedroom at night, no phones at meals, parental controls on app downloads and screen time, and an understanding that you may check in on her usage. Talk about what to do if she sees something upsetting or someone contacts her in a way that feels wrong, so she knows she can come to you without losing the phone.
U: What about social media?
A: Most major platforms have a minimum age of 13, so it is reasonable to hold off until then. When the time comes, set her accounts to private, go through the privacy settings together, and keep talking about what she sees online. Following a few of the same accounts yourself can make those conversations more natural. Agreeing that she shows you new apps before installing them keeps things open.

=== h-parenting-02 | kids
U: We're starting potty training with our son who's two and a half. Is there a method that actually works?
A: Most toddlers do best with a relaxed, consistent approach rather than a strict deadline. Pick a few days when you can stay mostly at home, switch to underwear or training pants during the day, and offer the potty at regular times: after waking, after meals and before going out. Praise effort rather than results, keep the potty somewhere easy to reach, and let him see that it is a normal part of the day. Accidents are expected, so stay calm and matter-of-fact.
U: He's scared of the big toilet. Should we only use a potty?
A: A potty is perfectly fine to start with, because his feet can be on the floor and he feels stable. Later, a child seat on the toilet with a step stool gives the same stable feeling. Let him flush for you, or flush after he leaves the room, if the noise scares him. Reading a short picture book about using the toilet can also make it feel familiar.
U: What about nights?
A: Night dryness comes later for most children, often months or even years after daytime training, and it depends on development more than practice. Keep using nappies or pull-ups at night until he wakes up dry most mornings. Limiting drinks right before bed helps a little, but do not restrict fluids during the day. A waterproof mattress protector will save a lot of laundry in the meantime.

=== h-pets-01 | pets, cat
U: Our cat Biscuit has started shredding the arm of our new sofa. We have a scratching post but she ignores it. How do I get her to stop?
A: Scratching is a normal need for cats, so the goal is to redirect it rather than stop it. Cats often ignore posts that are too short or wobbly, so choose a tall, heavy post she can stretch out fully on, and place it right next to the sofa arm she likes, since that is where she wants to mark. Rub catnip or silvervine on it, and reward her with a treat when she uses it. Many cats also like horizontal cardboard scratchers.
U: Can I make the sofa less attractive?
A: Yes. Cover the arm temporarily with a throw, double-sided sticky tape made for furniture, or a clear plastic protector, since most cats dislike the feel. Once she has been using the post for a few weeks, you can remove the covers gradually. Keep her claws trimmed every couple of weeks to reduce damage, and never punish her, because it tends to increase stress and scratching.
U: She mostly does it in the morning when we get up.
A: That fits, because cats often scratch after waking up, both to stretch and to mark territory, and she may also be greeting you. Put a scratcher where she sleeps and one near the sofa, and give her a short play session with a wand toy in the morning so she has an outlet for that burst of energy. Rewarding her there with breakfast helps too.

=== h-pets-02 | pets, dog
U: Our labrador Bruno is eleven now and he's getting stiff, especially after lying down. Are joint supplements worth trying?
A: Stiffness after rest is common in older large dogs and is often a sign of arthritis. Some owners find that supplements containing omega-3 fatty acids from fish oil help, and there is reasonable evidence for omega-3s in particular; glucosamine and chondroitin have more mixed evidence. Ask your vet before starting anything, because they can check the dose and rule out other causes. Prescription pain relief is often very effective and can make a big difference to his quality of life.
U: Should we still walk him as much?
A: Regular, gentle exercise is important for arthritic dogs, but several shorter walks are usually better than one long one. Keep to soft surfaces like grass where possible, avoid lots of ball chasing and sudden turns, and watch for stiffness the next day as a sign you did too much. Swimming or hydrotherapy is excellent exercise without impact. A warm coat on cold, damp days can also ease stiffness.
U: Anything we can change at home?
A: Keeping him lean is one of the most helpful things, since extra weight puts more strain on his joints. Rugs on slippery floors help him get up, an orthopedic bed supports his joints, and a ramp for the car saves him from jumping. Raised food and water bowls can also make mealtimes more comfortable. Ask your vet for a weight check at each visit so you can adjust his food as his activity changes.

=== h-home-01 | house, kids
U: The floorboards in our upstairs hallway squeak loudly, and the baby wakes up every time someone walks past. Can I fix it without lifting the carpet?
A: Often yes. Squeaks are usually caused by a board rubbing against a nail or moving slightly on a joist. There are kits designed for fixing squeaks through carpet, which use special screws that you drive through the carpet into the joist; the head snaps off below the carpet surface so nothing shows. Find the joists with a stud finder or by tapping, mark the squeaky spots, and drive the screws there.
U: What if I had the carpet up?
A: With the carpet lifted, you can screw the board down to the joist with countersunk wood screws, which hold far better than nails. Drill a pilot hole first to avoid splitting the board. If the board is rubbing against its neighbour, a little talcum powder or graphite brushed into the gap can stop it. Check for pipes and cables before drilling; they often run under hallway floors.
U: Thanks, I'll try the kit first.
A: Good plan. Test each spot after fixing it, since a squeak sometimes moves to the next board over. Fixing the squeaks nearest the bedroom door first will make the biggest difference for the baby, and you can work outward from there. If the kit does not solve a stubborn squeak, it may be a joist or a pipe clip moving instead, which is easier to diagnose with the carpet up or from the ceiling below.

=== h-home-02 | house, housing
U: The windows in our rented flat are dripping with condensation every morning in winter, and there's black spotting on the frames. What can we do?
A: Condensation happens when warm, moist indoor air meets cold glass. Reduce moisture by using extractor fans or opening a window while cooking and showering, putting lids on pans, drying laundry outside or in a ventilated room, and keeping furniture slightly away from outside walls. Keep the flat at a steady, moderate temperature rather than letting it get very cold and then heating it quickly. Wipe the windows each morning with a cloth or squeegee.
U: Should I tell the landlord about the black spots?
A: Yes, report it in writing with photos. Mould on frames can be a sign of poor ventilation, broken extractor fans or window seals that need attention, which are often the landlord's responsibility. Clean small patches with a mould spray or diluted detergent while wearing gloves, but do not paint over it, and keep a record of when you reported it.
U: Would a dehumidifier help?
A: A dehumidifier can help a lot in a flat with persistent condensation, especially if you dry clothes indoors. A desiccant model works better in cold rooms, while a compressor model is more efficient in warmer rooms. Empty the tank regularly and aim for indoor humidity of around 40 to 60 percent, which you can check with a cheap hygrometer. Run it mostly in the evening and overnight, when condensation forms.

=== h-clean-01 | house
U: We have very hard water where we live and the kettle and shower head are always covered in white crust. What's the best way to get rid of it?
A: That white crust is limescale, and it dissolves easily in mild acid. For the kettle, fill it halfway with equal parts water and white vinegar, or use a few tablespoons of citric acid in water, bring it to the boil, leave it for an hour, then rinse and boil fresh water a couple of times. For the shower head, unscrew it and soak it in vinegar for a few hours, or tie a bag of vinegar around it if it will not come off. Scrub the nozzles with an old toothbrush.
U: Does hard water damage appliances?
A: Over time, yes. Limescale builds up on heating elements and inside pipes, making kettles, washing machines and dishwashers work harder and use more energy. Using dishwasher salt, descaling regularly and using the right amount of detergent helps. Some homes install a water softener for the whole house, which is a bigger investment but reduces scale everywhere. A simple water test strip will tell you how hard your water actually is.
U: What about the glass shower screen?
A: A squeegee after every shower prevents most spots from forming, and it only takes a few seconds. For existing marks, spray on a vinegar and water solution, leave it for ten minutes and wipe clean with a microfibre cloth. For stubborn build-up, a paste of baking soda and a little water works as a gentle scrub that will not scratch the glass.

=== h-lang-01 | language, job, travel
U: My company sends me to our São Paulo office a few times a year and I'm trying to learn Brazilian Portuguese. The nasal vowels are impossible. Any tips?
A: Nasal vowels are tricky because English does not use them to distinguish words. Practise by saying the plain vowel, then letting some air go through your nose without closing your mouth, as if starting to hum. Listen for the difference between pairs like pão and pau. Record yourself and compare with native audio. Words ending in -ão, like não, coração and mão, are the most common, so master those first.
U: Brazilian Portuguese vs European, does it matter for what I learn?
A: For your situation, definitely focus on Brazilian Portuguese. The grammar is largely the same, but pronunciation, some vocabulary and the way people address each other differ a lot. Brazilians commonly use você and drop some of the formal structures you see in European courses. Make sure your app, course or tutor is explicitly Brazilian, so you are not constantly unlearning things.
U: Any good ways to practise listening?
A: Brazilian podcasts for learners, YouTube channels and telenovelas with Portuguese subtitles are all useful. Listen to the same short clip several times and shadow it, repeating along with the speaker. Before each trip, practise the situations you will actually face, like meetings, ordering lunch and small talk with colleagues, so the most useful phrases are fresh. Your colleagues there will usually be delighted to help you practise.

=== h-lang-02 | language, partner
U: My partner is Dutch and his whole family speaks Dutch at dinner. I'm learning, but I can't follow them at all when they talk fast. How do I get there?
A: Family dinners are one of the hardest listening situations, because people talk over each other, use dialect and refer to shared history. Build up in steps: first learner podcasts and slow news, then Dutch TV with Dutch subtitles, then unscripted shows and podcasts at normal speed. Ask your partner to speak Dutch with you for short periods every day, even just at breakfast. Over time, the speed stops feeling impossible.
U: They keep switching to English to be nice, which doesn't help.
A: That is very common with Dutch speakers, who are often excellent at English. Tell the family kindly that you would love them to keep speaking Dutch to you, even if you answer partly in English for now. Some learners agree on a phrase that signals keep going in Dutch. Most families are happy to help once they know you want it.
U: Grammar-wise, what should I focus on?
A: Word order is the biggest hurdle early on: the verb goes in second position in main clauses and to the end in subordinate clauses. Learn de and het nouns together with their articles from the start, since there is no reliable rule for most of them, and practise separable verbs like opbellen and meenemen, which split apart in ordinary sentences.

=== h-hobby-01 | photo
U: I've gotten into film photography with an old Pentax I found in my dad's attic. Is developing black and white film at home hard?
A: Black and white development at home is very doable and needs only a small amount of equipment: a changing bag, a developing tank with reels, a thermometer, measuring jugs, and three chemicals, namely developer, stop bath and fixer. The trickiest step is loading the film onto the reel in complete darkness, so practise with a spare roll in daylight first. After that, it is mostly about following times and temperatures carefully.
U: Which film should I start with?
A: A forgiving, widely available film with a speed of 400, such as Ilford HP5 Plus or Kodak Tri-X, is ideal. It handles a wide range of lighting and tolerates small errors in exposure and development. Many developers have published times for these films, so you can find reliable starting points easily, and you can push them a stop in dim light.
U: How do I get the photos onto my computer?
A: Most home developers scan their negatives. You can use a dedicated film scanner, a flatbed scanner with a film holder, or a digital camera with a macro lens and a light panel underneath the film. Inverting the negatives in editing software turns them into positives, and a little contrast adjustment usually finishes the job. Many labs also offer scanning if you would rather not buy equipment yet.

=== h-hobby-02 | crafts
U: I made my first end-grain cutting board in my woodworking class. What finish should I use so it's food safe?
A: Food-grade mineral oil is the standard choice for cutting boards. Apply it generously, let it soak in for a few hours or overnight, and wipe off the excess. Repeat several times for a new board, especially on end grain, which absorbs a lot. Many people finish with a board butter made from mineral oil and beeswax, which adds a little water resistance and a soft sheen. Avoid vegetable oils such as olive oil, which can go rancid.
U: How often should I re-oil it?
A: Once a month is a good rhythm for a board in regular use, or whenever the wood looks pale and dry. Wash it by hand with warm soapy water, never in the dishwasher, and dry it standing on its edge so both sides get air. Never leave it soaking in water, because the wood will swell and may crack along the glue lines.
U: What wood is best for the next one?
A: Hard maple is the classic, because it is tough but gentle on knife edges and has a tight grain that resists stains. Walnut and cherry are also popular and look beautiful, and mixing them in a pattern makes a striking board. Avoid open-grained woods like red oak, which can trap moisture and food particles. Whatever you choose, use a waterproof wood glue rated for food contact.

=== h-hobby-03 | games
U: I've been playing chess online for about a year and I'm stuck around 1500 in blitz. What should I work on?
A: Around that level, most games are decided by tactics: missed forks, pins, undefended pieces and simple mates. Spending 15 to 20 minutes a day on tactical puzzles is usually the most effective way to improve. Playing fewer blitz games and more longer games, such as 15 minutes plus 10 seconds, gives you time to calculate and learn from your choices. Review every loss briefly to see where it really turned.
U: Should I learn more openings?
A: Not in depth yet. Learn the main ideas of one opening as White and one defence against each of 1.e4 and 1.d4, focusing on development, central control and king safety rather than long memorized lines. Most games at your level leave theory early, so understanding typical plans is more valuable than memorizing moves. You can deepen your repertoire later once your results stabilise.
U: What about endgames?
A: Basic endgames pay off quickly. Learn king and pawn endings, the idea of opposition, and the fundamental rook endgames, then practise converting winning positions against a computer. Many games are thrown away in the last phase, so a little endgame technique turns draws into wins. Short study sessions of ten minutes a few times a week are enough to make a visible difference within a couple of months.

=== h-work-01 | job
U: A colleague on my project keeps missing deadlines and it's starting to affect my work. I'm not her manager. How do I bring it up without making things awkward?
A: Start with a private, friendly conversation focused on the work rather than on her as a person. Describe the specific impact, for example that your report waits on her data and last week it arrived two days late, and ask whether something is getting in the way. Sometimes people are overloaded or unclear on priorities. Agree together on what would help, such as earlier check-ins or a shared timeline with clear handover dates.
U: And if nothing changes?
A: Give it a fair chance, then raise it with the project lead or your manager, framed around the project risk rather than blame. Bring concrete examples and what you have already tried. A good lead will want to know about delays early, and raising it protects your own work from being judged unfairly. It also gives the lead a chance to rebalance the workload if that is the real problem.
U: Thanks, that helps.
A: Keep brief notes of dates and impacts as you go, so the conversation stays factual if you do need to escalate. And if things improve after your chat, say so; acknowledging the change makes the working relationship much easier. It is also worth checking that your own handovers are clear, since vague requests are a common source of missed deadlines, and a short written summary after each conversation avoids misunderstandings later.

=== h-work-02 | job
U: I have to present our quarterly numbers to the executive team next Tuesday and I only get ten minutes. How should I structure it?
A: With senior audiences and little time, lead with the conclusion. Open with one slide that states the key message and what you need from them, such as a decision or awareness of a risk. Then give two or three supporting points with the most important numbers, one slide each, and end with next steps. Put detailed tables in an appendix so you can answer questions without cluttering the main talk.
U: How many slides is too many?
A: For ten minutes, aim for five to seven slides, including the title. Each slide should carry one message, written as a full sentence headline, such as revenue grew 8 percent, driven by new customers, rather than a vague label like revenue overview. Charts beat tables for showing trends, and highlighting the one number that matters on each chart helps people follow.
U: What if they interrupt with questions halfway?
A: Executives often do, and it is usually a good sign that they are engaged. Answer briefly, then steer back to where you were. Know your numbers well enough to answer without looking at the slides, and if you do not know something, say you will follow up the same day rather than guessing. Leave a minute at the end in case the discussion runs over.

=== h-health-01 | health
U: I've been getting headaches most afternoons, and I spend about nine hours a day looking at screens. Could that be it?
A: Long screen time is a common trigger for tension headaches and eye strain, especially if your screen is too bright, too close, or positioned so that you tilt your head. Try the 20-20-20 rule: every 20 minutes, look at something about 20 feet away for 20 seconds. Position the monitor about an arm's length away with the top at or slightly below eye level, and match its brightness to the room. Drinking enough water and taking regular short breaks help too.
U: I haven't had an eye test in years.
A: Then it is definitely worth booking one. An outdated or missing prescription, even a mild one, can cause eye strain and headaches, especially with close work. Mention the afternoon headaches and your screen time to the optometrist, since they may suggest glasses specifically for computer distance. If headaches are severe or sudden, or come with other symptoms such as vision changes, see a doctor promptly.

=== h-health-02 | health, routine, job
U: I hit a wall every day around 3 pm at work and end up eating biscuits from the kitchen. I start at 8 and have lunch at noon. How do I keep my energy up?
A: An afternoon dip is partly natural, because the body clock has a small low point in the early afternoon, but lunch and sleep can make it much worse or better. A lunch with protein, fibre and vegetables, rather than mostly white bread or pasta, gives steadier energy. A short walk outside after lunch, ideally in daylight, is one of the most effective pick-me-ups. Keep water at your desk, since mild dehydration can feel like tiredness.
U: What snack could I have instead of biscuits?
A: Plan a mid-afternoon snack that combines protein or fat with some fibre, such as an apple with a handful of nuts, yogurt with berries, hummus with carrot sticks, or a boiled egg and some crackers. Having it ready at your desk makes it easier to skip the biscuit tin. If you drink coffee in the afternoon, keep it before about 2 pm so it does not affect your sleep that night.

=== h-garden-01 | garden
U: Our back lawn is more moss than grass, especially in the shady corner under the trees. How do I fix it?
A: Moss thrives where grass struggles: shade, poor drainage, compacted soil and low fertility. Removing the moss alone will not solve it, so deal with the causes too. In early autumn or spring, rake out the moss vigorously with a spring-tine rake or a scarifier, aerate the soil by pushing a garden fork in every 10 centimeters, and overseed with a shade-tolerant grass seed mix. Feed the lawn and avoid cutting it too short, which weakens the grass.
U: The shady corner never grows grass well though.
A: Under dense trees, grass may never be happy, however much you do. You could thin the lower branches of the trees to let in more light, or accept that corner as something else, such as a bark path, a shade-loving ground cover or a woodland bed with ferns, hellebores and spring bulbs. Many people find that a planted corner looks better than patchy grass ever did.
U: When should I do all this?
A: September is ideal in most temperate climates, when the soil is still warm and moist and weeds are less vigorous, so new grass establishes quickly. Spring is the second-best time, but the seedlings then have to cope with summer dry spells, so be ready to water. Avoid moss killers containing iron sulphate near paving, since they can stain it, and rake out the dead moss a couple of weeks after any treatment.

=== h-books-01 | books, commute
U: I listen to audiobooks on my 30-minute bus ride, but I feel like I remember less than when I read paper books. Is that normal?
A: It is a common feeling. Studies suggest comprehension is fairly similar for listening and reading in many situations, but attention is the key difference. When you listen while doing something else, such as looking out of the window or checking your phone, your mind wanders more easily and you cannot glance back the way you can on a page. Complex non-fiction also tends to be harder to absorb by ear than stories.
U: How can I retain more?
A: Choose audiobooks that suit listening, such as narrative non-fiction, memoirs and novels, and save dense or technical books for print. Slow the playback down if you usually speed it up. Pause after each chapter and summarise it to yourself in a sentence or two, and use the bookmark feature for ideas you want to come back to. Talking about the book with someone else is one of the best ways to make it stick.

=== h-music-01 | music
U: I'm 45 and just bought a digital piano to finally learn. Should I get a teacher or use an app?
A: Both can work, but a teacher, even for a handful of lessons, helps a lot in the first months, because posture, hand position and fingering habits are easy to get wrong on your own and hard to unlearn later. Apps are good for motivation, practising reading music and daily structure. Many adults combine them: a lesson every two weeks and an app or method book in between. Adult beginners often progress quickly because they practise deliberately.
U: How long should I practise each day?
A: Twenty to thirty focused minutes a day is plenty at the start, and it is far better than a long session once a week. Begin with a few minutes of scales or finger exercises, then work on a piece in small sections, slowly and hands separately before hands together. End with something you can already play, so you finish on a good note.
U: My fingers feel so clumsy.
A: That is completely normal, and it improves with time as the connections between brain and fingers develop. Keep your wrists relaxed and your fingers gently curved, as if holding a ball. Practise slowly enough to play correctly; speed comes with repetition, and rushing only trains the mistakes. Simple finger independence exercises, such as playing five-note patterns slowly with each hand, make a noticeable difference within a few weeks.

=== h-car-01 | car
U: My 2014 Golf wouldn't start two mornings in a row after the cold snap. The engine just clicks. Is it the battery?
A: A clicking sound with no engine turnover in cold weather is very often a weak battery. Cold reduces a battery's output, and most car batteries last around four to six years, so if yours is older than that, it is the most likely cause. A jump start will confirm it: if the car starts easily with a jump, the battery or charging system is the problem. Many garages and parts shops will test the battery and alternator for free.
U: If I need a new one, can I fit it myself?
A: On many cars it is a simple job with basic tools: disconnect the negative terminal first, then the positive, remove the clamp, and swap the battery. Connect the positive first when fitting the new one. Some newer cars, including many with start-stop systems, need the new battery to be registered with the car's computer, so check your manual or ask the shop.
U: How do I avoid this next winter?
A: If the car sits unused for long periods, drive it for at least 20 to 30 minutes once a week or use a battery maintainer plugged in at home. Have the battery tested before winter, keep the terminals clean and tight, and avoid lots of very short trips, which drain more than they recharge. A battery older than five years is worth replacing before the cold arrives.

=== h-event-01 | party
U: My best friend turns 40 next month and I'm organising a surprise party. How do I keep it a secret?
A: Keep the circle of people who know the full plan small, and use a private group chat or email thread that your friend cannot see. Give guests a clear arrival time at least 30 minutes before your friend is due, and arrange for a trusted person, often a partner or close friend, to bring them along with a believable cover story, such as a quiet dinner. Avoid posting anything on social media, and ask guests to park out of sight.
U: What food works for about 30 people?
A: A grazing table or buffet is easiest for that size, since people can eat while mingling. A few large trays such as lasagne, a curry with rice or pulled pork with buns, plus salads, bread and a dessert table work well. Ask two or three friends to bring a dish each. Plan on roughly 200 to 250 grams of main dish per person if it is the evening meal.
U: Any ideas to make it personal?
A: Ask guests to send a photo or a short memory in advance and display them on a board or in a slideshow. A playlist of songs from the year your friend turned 18 is always a hit, and a few old photos on the cake or the invitations make people laugh. A short toast with two or three stories is a nice way to bring everyone together.
"""

FILLERS: list[base.Filler] = base.parse_fillers(FILLER_TEXT)

# ---------------------------------------------------------------------------
# Questions and their evidence sessions.
# ---------------------------------------------------------------------------

SPECS: list[Spec] = [
    # -- single-session-user ------------------------------------------------
    Spec(
        qid="lmh-001", qtype="single-session-user",
        question="Which city did I grow up in?",
        answer="Gdańsk (in Poland).",
        asked="2024/02/12 10:20", start="2023/08/01",
        evidence=[Evidence("2023/11/26 17:40", "cooking", """
U: I'd like to make pierogi for Christmas Eve this year, the classic ones with potato and farmer's cheese. Can you give me a dough recipe that stays soft?
A: A soft, pliable pierogi dough usually includes some fat and warm liquid. Try 500 grams of plain flour, 1 egg, 1 teaspoon of salt, 3 tablespoons of soft butter or oil, and about 250 milliliters of warm water or milk, added gradually. Knead for about eight minutes until smooth and elastic, then wrap it and rest it for at least 30 minutes, which relaxes the gluten and makes rolling much easier. Roll it thin, about 2 millimeters, and cut rounds of 7 to 8 centimeters.
U!: Would sour cream work instead of butter? My babcia always made them for Wigilia when I was growing up in Gdańsk, and hers were incredibly tender, nothing like the chewy ones I've made so far.
A: Sour cream is a great idea, and many family recipes use it; it makes the dough richer and more tender. Replace the butter with about 4 tablespoons of full-fat sour cream and reduce the water slightly. Using hot rather than warm water also helps, since it softens the flour and gives a silkier dough. And do not skimp on resting time: an hour is even better than 30 minutes.
U: How do I stop them bursting when I boil them?
A: Seal the edges well by pressing firmly and pinching, and make sure no filling gets onto the edges, since grease stops the dough sticking to itself. Avoid overfilling: a heaped teaspoon is enough for a 7-centimeter round. Cook them in a large pot of gently boiling salted water, in batches so they do not crowd, and lift them out with a slotted spoon a minute or two after they float.
U: Can I make them ahead?
A: Yes. Freeze them uncooked on a floured tray in a single layer, then transfer them to bags once they are solid. Cook them straight from frozen, adding a couple of minutes to the boiling time. Boiled pierogi also reheat beautifully when fried in butter with onions, which many people consider the best way to eat them. Label the bags with the filling and the date.
""")],
    ),
    Spec(
        qid="lmh-002", qtype="single-session-user",
        question="Which ingredient can't my daughter eat?",
        answer="Sesame: Mila has a sesame allergy (so no hummus, tahini or products that may "
               "contain sesame).",
        asked="2023/10/05 19:10", start="2023/03/01", avoid=frozenset({"kids"}),
        evidence=[Evidence("2023/06/22 20:05", "party", """
U: I'm throwing my daughter's sixth birthday party at the park next month, with about fifteen kids from her class. What snacks are easy to serve outdoors?
A: For a park party, think finger food that does not melt, spill or need cutlery. Good options include mini sandwiches or wraps cut into pinwheels, cheese cubes and crackers, popcorn in paper cones, fruit skewers, cherry tomatoes and cucumber sticks, and mini muffins. Keep portions small, pack everything in containers with lids to keep insects away, and use a cool bag with ice packs for anything with cheese or meat. A big jug of water and some juice boxes cover the drinks.
U!: Good list. One big thing: Mila has a sesame allergy, so no hummus or tahini, and I'm nervous about store-bought stuff like bread rolls and crackers. How careful do I need to be?
A: Very careful, because sesame is a common hidden ingredient in bread, crackers, bagels, cereal bars and dips. Read every label, including precautionary lines such as may contain, and keep the packaging so you can double-check on the day. Baking the cake and some of the snacks at home gives you full control. Mention the allergy in the invitation so nobody brings something risky, and keep her prescribed medication and allergy action plan with you at the park.
U: And what about the cake?
A: A simple homemade sponge or cupcakes with buttercream are easy to keep safe. Use plain ingredients you have checked, and be careful with decorations like sprinkles and chocolates, which can be made in factories that handle seeds. Cupcakes are also easier than a big cake to serve at a park, since there is no cutting and no plates needed.
""")],
    ),
    Spec(
        qid="lmh-003", qtype="single-session-user",
        question="What section of the choir am I in?",
        answer="The altos (they sing alto in a community choir).",
        asked="2024/05/08 21:00", start="2023/11/15", avoid=frozenset({"music"}),
        evidence=[Evidence("2024/02/19 18:30", "health", """
U: I've had a cold for a week and my throat is still scratchy and my voice cracks. How long does that usually last?
A: After a cold, hoarseness and a scratchy throat often linger for one to two weeks, since the vocal folds stay swollen for a while after the infection clears. Rest your voice as much as possible, drink plenty of water, and breathe steam from a bowl of hot water or a hot shower to soothe the throat. Avoid whispering, which actually strains the voice more than speaking softly. If the hoarseness lasts more than three weeks, see a doctor.
U!: The timing is awful. I sing alto in a community choir and our spring concert is on Saturday, March 2. Rehearsals are twice a week. Should I skip them?
A: It is wise to sit out, or only sing very lightly, for a few rehearsals while your voice recovers. You can still attend, follow the score, mouth the words and listen, which keeps you prepared without strain. When you return, warm up gently with humming and lip trills in the comfortable middle of your range before singing out. If your voice feels tired or rough, stop; pushing through can cause lasting damage.
U: Any drinks or remedies singers swear by?
A: Plain room-temperature water is the most useful, because the vocal folds depend on your overall hydration. Warm herbal tea with honey soothes the throat, and steam inhalation helps moisten the folds directly. Go easy on alcohol and caffeine, and be aware that lozenges with strong menthol can dry things out rather than help. Gentle steam the evening before the concert is a good habit.
""")],
    ),
    Spec(
        qid="lmh-004", qtype="single-session-user",
        question="What did my e-bike end up costing me?",
        answer="€2,350 (after the cycle-to-work discount).",
        asked="2023/09/12 08:15", start="2023/02/10", avoid=frozenset({"bike"}),
        evidence=[Evidence("2023/05/30 19:45", "bike", """
U: How should I look after the battery on my new electric bike so it lasts as long as possible?
A: Lithium-ion e-bike batteries last longest when they avoid extremes. Keep the charge between about 20 and 80 percent for everyday use, and only charge to 100 percent before a long ride. Store and charge the battery indoors at room temperature, not in a freezing shed or a hot car. Use the original charger, and unplug it once it is full. If you will not ride for several weeks, store the battery at around half charge and check it monthly.
U!: Great, because it was a big purchase, €2,350 even after the cycle-to-work discount, so I want it to last. How many years should I expect?
A: A well-treated e-bike battery typically lasts three to five years, or roughly 500 to 1,000 full charge cycles, before its capacity drops noticeably. It does not stop working suddenly; you will gradually get less range from each charge. Replacement batteries are expensive, so those habits genuinely pay off over time. Keep your receipt and check the warranty period, which is often two years for the battery.
U: Is it OK to ride in the rain?
A: Yes, e-bikes are built to handle rain and road spray. Avoid pressure washers and deep puddles that could submerge the motor, dry the bike off after wet rides, and keep the battery contacts clean and dry. If you store it outside, a breathable cover helps, but bring the battery indoors. Lubricate the chain after a wet ride as well.
""")],
    ),
    Spec(
        qid="lmh-005", qtype="single-session-user",
        question="What's my wife's job?",
        answer="She is an intensive care (ICU) nurse, working night shifts.",
        asked="2024/01/18 12:30", start="2023/07/01", avoid=frozenset({"partner"}),
        evidence=[Evidence("2023/10/09 16:20", "cooking", """
U: Can you suggest some meals that work for someone who has to eat in the middle of the night?
A: Night-shift eating works best with a main meal before the shift and lighter, easy-to-digest food during it. Good options include soups, wraps with lean protein, grain bowls with roasted vegetables, overnight oats, yogurt with fruit, and egg muffins baked in a tin. Avoid very greasy or heavy meals in the early hours, which can cause indigestion and drowsiness. Pack things that taste good cold or only need a minute in a microwave.
U!: They're for my wife. She's an ICU nurse and she's on a run of four night shifts a week right now, so she barely gets a proper meal at 3 am. I want to prep things on my days off.
A: Intensive care shifts are hectic, so food that can be eaten quickly in a short break is ideal. Prep a batch of lentil soup and a tray of chicken and vegetable traybake, portion them into containers, and add a few grab-and-go items such as boiled eggs, hummus pots, cheese and crackers, and cut fruit. Label everything with the day so she can just grab a box. A flask of soup is great if the break room microwave is always busy.
U: What about when she gets home in the morning?
A: A small, light meal before sleeping, such as toast with eggs, yogurt or a bowl of porridge, helps her sleep without waking up hungry. Encourage her to avoid caffeine in the second half of the shift, and keep the bedroom dark and cool with blackout curtains, since daytime sleep is easily disturbed by light and noise.
""")],
    ),
    Spec(
        qid="lmh-006_abs", qtype="single-session-user",
        question="What is my sister doing her PhD in?",
        answer="You never mentioned a sister doing a PhD. You mentioned your younger brother "
               "Anders, who defended his PhD in chemistry at Uppsala in late August 2023.",
        asked="2023/12/03 15:00", start="2023/05/20",
        evidence=[Evidence("2023/09/02 11:30", "gift", """
U: I need a gift idea for someone who has just finished a doctorate. Something more meaningful than a bottle of wine.
A: A PhD is a huge milestone, so a personal gift goes a long way. Ideas include a professionally bound copy of the thesis, a framed print of its first page or a key figure, a quality pen, a good bag for conferences, or an experience such as a weekend away to finally rest. A card in which you write what you admire about their persistence often means more than the gift itself.
U!: It's for my younger brother Anders. He defended his PhD in chemistry at Uppsala last week after five years of work, and the whole family is really proud of him.
A: Congratulations to Anders. For a chemist, a framed print of a molecule from his research or a stylish periodic table poster could be a fun nod to his field. The bound thesis is especially nice as a family keepsake too. You could also give him a voucher for a good restaurant to celebrate, or a well-made laptop bag for the next stage of his career.
U: I like the framed molecule idea. How would I get that made?
A: Ask him, or a colleague of his, discreetly for the structure he is proudest of, or take a figure from his published papers. Several print shops and online artists create minimalist molecule prints from a chemical name or a drawing. Choose a simple frame, and add the date of his defence to make it a keepsake.
""")],
    ),
    # -- single-session-assistant -------------------------------------------
    Spec(
        qid="lmh-007", qtype="single-session-assistant",
        question="When I was planning the Slovenia trip with my parents, which caves did you say "
                 "were worth choosing over the famous ones?",
        answer="The Škocjan Caves (rather than Postojna Cave).",
        asked="2024/06/14 09:00", start="2023/12/01",
        evidence=[Evidence("2024/03/04 20:10", "travel", """
U: We're spending four days in Ljubljana in May with my parents, who are in their seventies. What's worth doing in and around the city?
A!: Ljubljana is a lovely, walkable base. A relaxed plan could be:
1. Day 1: the old town, the Triple Bridge, the central market and a river cruise, then the funicular up to the castle for the views
2. Day 2: a day trip to Lake Bled, with a traditional pletna boat to the island and a gentle walk along the shore
3. Day 3: the Škocjan Caves rather than the better-known Postojna Cave, since Škocjan's huge underground canyon is more spectacular and far less crowded; guided tours last about two hours
4. Day 4: Tivoli Park, a museum and a long lunch before the trip home
Book the cave tour and any guided trips a few weeks ahead, since May is busy.
U: How much walking is the cave tour? My dad has a bad hip.
A: The standard tour covers about three kilometers with several hundred steps and some slippery sections, so it could be demanding with a bad hip. Ask the site about shorter route options and take it slowly. If it looks like too much for him, Postojna has a little train that carries visitors through much of the cave, which is far easier on the legs.
U: Good to know. Any restaurants you'd suggest for traditional food?
A: Look for a gostilna, a traditional Slovenian inn, for dishes such as štruklji, jota soup and Carniolan sausage. In spring, the Open Kitchen food market on Fridays is a fun way to try many dishes in one go, and the riverside cafés are pleasant for an afternoon coffee. Lunch menus at these inns are usually good value, and portions are generous, so sharing dishes works well with a group.
""")],
    ),
    Spec(
        qid="lmh-008", qtype="single-session-assistant",
        question="How much ginger syrup per pitcher did you tell me to use in the alcohol-free "
                 "drink for my friend's baby shower?",
        answer="150 ml per pitcher (which serves about eight glasses).",
        asked="2023/08/24 18:00", start="2023/01/20",
        evidence=[Evidence("2023/05/12 21:15", "drinks", """
U: I'm co-hosting a baby shower for my friend Priya next month and I'd like a signature drink that everyone can have, including her. Any ideas?
A!: A sparkling ginger, lime and mint cooler works well and feels special. For one pitcher, which serves about eight glasses:
- 150 ml of homemade ginger syrup (simmer 100 grams of sliced fresh ginger with 200 grams of sugar and 200 ml of water for 20 minutes, then strain and cool)
- the juice of 4 limes
- a large handful of mint leaves, lightly bruised
- 1 liter of chilled sparkling water, added just before serving
Fill the glasses with ice and garnish with lime wheels. Taste and add a little more syrup if you like it sweeter.
U: Can I make the syrup ahead?
A: Yes, ginger syrup keeps in a clean, sealed jar in the fridge for about two weeks, so you can make it a few days before. Mix the lime juice and syrup in the morning, and add the mint and sparkling water only when the guests arrive, so the drink stays fizzy and the mint stays bright green.
U: Sounds perfect. What food would go with it?
A: Light, fresh bites pair well with a gingery drink: cucumber sandwiches, mini quiches, fruit skewers and lemon cupcakes. A grazing board with cheeses, crackers, grapes and berries is easy to prepare in advance, and a few savoury pastries from a good bakery save you time on the day. Keep everything bite-sized so guests can eat standing up.
""")],
    ),
    Spec(
        qid="lmh-009", qtype="single-session-assistant",
        question="Which program did you suggest for batch-turning my mother's phone pictures into "
                 "JPEGs?",
        answer="heif-convert, from the libheif tools (installed with sudo apt install "
               "libheif-examples).",
        asked="2024/03/27 14:40", start="2023/10/01",
        evidence=[Evidence("2023/12/28 11:05", "tech", """
U: My mum sent me about 600 photos from her iPhone, and they're all .HEIC files. The old photo viewer on my Ubuntu laptop can't open them. How do I convert them all at once?
A!: The quickest way on Ubuntu is the heif-convert tool from libheif. Install it with sudo apt install libheif-examples, then, in the folder with the photos, run a small loop:
- for f in *.HEIC; do heif-convert -q 90 "$f" "${f%.HEIC}.jpg"; done
That converts each file to a JPEG at quality 90 and keeps the original names. If some files use a lowercase .heic extension, run the same loop with that pattern. Keep the originals until you have checked a few of the converted images.
U: Will the dates the photos were taken survive?
A: The converted files generally keep the EXIF metadata, including the date taken, so most photo managers will sort them correctly. Check one or two files in an image viewer's properties panel to be sure. If the dates are missing, exiftool can copy all the metadata from the originals to the JPEGs in a single command.
U: Is there a way to stop her phone from sending HEIC in future?
A: Yes. On her iPhone, go to Settings, Camera, Formats and choose Most Compatible, which saves new photos as JPEG. Alternatively, under Settings, Photos, Transfer to Mac or PC, choose Automatic, which converts photos to a compatible format when they are copied over a cable. The first option is simplest if she mostly shares photos by messaging or email, since the files then arrive as ordinary JPEGs.
""")],
    ),
    Spec(
        qid="lmh-010", qtype="single-session-assistant",
        question="What greenery did you say could survive in my hallway with no window?",
        answer="ZZ plant, snake plant (Sansevieria), cast-iron plant (Aspidistra) and pothos.",
        asked="2023/11/29 20:00", start="2023/04/01", avoid=frozenset({"garden"}),
        evidence=[Evidence("2023/07/16 13:25", "garden", """
U: We just painted our entrance hall and it looks bare. The problem is there's no window at all, just a glass panel in the front door. Are there any plants that could live there?
A!: A windowless hall is tough, but a few very tolerant plants can cope with dim light, especially if they get a little daylight from the door panel:
- ZZ plant (Zamioculcas), which stores water in its stems and tolerates low light and neglect
- Snake plant (Sansevieria), very hardy and happy to be left dry
- Cast-iron plant (Aspidistra), named for its toughness in dark corners
- Pothos, a trailing plant that copes with low light, though it grows slowly there
Water all of them sparingly, since plants in low light use very little water and overwatering is the main risk.
U: Would they be OK with the cold draught when the door opens in winter?
A: The ZZ plant and pothos prefer steady warmth, so keep them a little away from the door. Aspidistra and snake plants handle cooler spots better, as long as they do not sit in a freezing draught for long. Avoid placing any of them right next to a radiator either, since hot, dry air is just as stressful.
U: Could I use a grow light?
A: Yes, a small LED grow bulb on a timer for eight to ten hours a day makes a big difference in a dark room. Choose a full-spectrum bulb that fits an ordinary lamp, so it looks like normal lighting, and position it within about half a meter of the plants for the best effect.
""")],
    ),
    Spec(
        qid="lmh-011", qtype="single-session-assistant",
        question="What was the third name you came up with for my preserves stall?",
        answer="Bramble Lane Pantry.",
        asked="2024/04/02 10:45", start="2023/10/15",
        evidence=[Evidence("2024/01/21 16:00", "business", """
U: I'm starting a Saturday stall at our farmers market this spring, selling homemade jams, marmalades and chutneys. I need a name that sounds homemade but not twee. Any ideas?
A!: Here are a few to start from:
1. Jar and Hedgerow
2. The Preserve Shelf
3. Bramble Lane Pantry
4. Slow Simmer Kitchen
5. Sweet and Sharp
The first and third suggest foraged fruit and a countryside feel, while the fifth nods to the mix of sweet jams and tangy chutneys. Say them out loud, check that a matching web address and social media names are free, and make sure nobody nearby already trades under something similar.
U: What do I need legally to sell jam?
A: Requirements vary by country, but usually you must register as a food business with your local authority, complete basic food hygiene training and follow labelling rules. Labels typically need the product name, the ingredients with allergens highlighted, the net weight, a best-before date and your name and address. Many markets also ask for public liability insurance.
U: How should I price the jars?
A: Add up the cost of fruit, sugar, jars, lids, labels and the stall fee, then add something for your time, which is easy to forget. Look at what similar stalls charge nearby. Many sellers price a standard jar at a round number and offer a small discount for three, which encourages people to try more flavours.
""")],
    ),
    Spec(
        qid="lmh-012", qtype="single-session-assistant",
        question="What internal temperature did you say the pork should reach before I took it "
                 "out, for the lunch with my in-laws?",
        answer="63°C (145°F) in the thickest part, then rest it for about five minutes.",
        asked="2023/06/06 19:30", start="2022/12/20",
        evidence=[Evidence("2023/03/18 17:50", "cooking", """
U: My in-laws are coming for Sunday lunch and I want to do a pork tenderloin. I'm scared of drying it out. How do I get it right?
A!: Pork tenderloin is lean, so the key is not overcooking it. Pat it dry, season it well, and sear it all over in a hot ovenproof pan for about five minutes. Then roast it at 200°C for roughly 15 to 20 minutes, depending on thickness. Use a meat thermometer and take it out when the thickest part reaches 63°C (145°F), then rest it loosely covered for five minutes before slicing. It will be slightly pink in the middle, juicy and safe to eat.
U: What should I put on it?
A: A simple rub of salt, pepper, garlic, and fennel seeds or smoked paprika works well. A mustard and honey glaze brushed on for the last five minutes of roasting adds flavour and colour. Apples, sage and cider are classic partners for pork, so a quick pan sauce made with the pan juices, a splash of cider and a spoonful of mustard is delicious.
U: Side dishes?
A: Roasted potatoes with rosemary, buttered green beans and a crunchy apple and fennel slaw would all work well. Everything except the pork can be prepared before your guests arrive, and the potatoes can roast in the same oven while the meat rests. A jug of the cider pan sauce on the table lets everyone help themselves, and a simple green salad adds freshness.
""")],
    ),
    # -- single-session-preference ------------------------------------------
    Spec(
        qid="lmh-013", qtype="single-session-preference",
        question="I'm bringing dessert to a dinner at a friend's place on Saturday. What should I "
                 "make?",
        answer="The user would prefer a dessert without dairy, since they are lactose intolerant, "
               "that is fruit-based and not very sweet, because very sugary cakes and brownies "
               "give them a headache; for example an olive oil and lemon cake, a plum traybake "
               "made with dairy-free spread, or poached or roasted fruit.",
        asked="2023/12/11 18:20", start="2023/05/01", avoid=frozenset({"food"}),
        evidence=[Evidence("2023/08/19 15:10", "food", """
U: We're planning a picnic at the lake next weekend with a few friends. What's easy to carry and doesn't need a fridge?
A: Good picnic food is sturdy, tastes good at room temperature and is easy to eat with your hands. Try a grain salad such as couscous with roasted vegetables, a Spanish tortilla cut into wedges, filled flatbreads, crunchy raw vegetables with dips, and whole fruit. Avoid mayonnaise-based salads in hot weather. Pack everything in a cool bag with frozen water bottles, which double as cold drinks later in the day.
U!: Nice. Just so you know, I'm lactose intolerant, so cheese boards and cream-based stuff are out for me. And for something sweet I'd rather have fruit than anything sugary; really sweet cakes and brownies give me a headache.
A: Then focus on fruit-led, dairy-free treats. Ripe peaches or cherries, a watermelon cut into wedges, or fruit skewers are simple and refreshing. If you want to bake, an olive oil cake with lemon, oat and date bars with only a little added sugar, or a plum traybake made with a dairy-free spread all travel well. Check labels, since many shop-bought biscuits contain milk powder.
U: What should we drink?
A: A big bottle of water with cucumber and mint, homemade iced tea, or sparkling water with freshly squeezed lemon are all refreshing without being too sweet. Freeze a few bottles the night before so they stay cold for hours, and bring a couple of reusable cups per person. A thermos of iced tea keeps well in a cool bag.
""")],
    ),
    Spec(
        qid="lmh-014", qtype="single-session-preference",
        question="I've got a week off in April. Any suggestions for where I could go?",
        answer="The user would prefer a destination they can reach by train from Cologne, since "
               "they no longer fly, ideally a walkable city with plenty of Art Nouveau "
               "architecture to explore on foot (for example Brussels, Nancy, Prague or "
               "Budapest).",
        asked="2024/02/26 20:30", start="2023/09/01", avoid=frozenset({"travel", "home-city"}),
        evidence=[Evidence("2023/11/20 19:00", "work", """
U: Do you have tips for working productively on long train journeys? I've got a six-hour ride to a conference in Vienna next month.
A: Long train rides can be surprisingly productive. Book a seat with a table and, if possible, in a quiet coach. Download everything you need in advance, since onboard wifi is often slow or patchy. Bring a power bank and a small multi-plug in case sockets are limited. Plan your work in blocks, such as writing and reading in the first half and lighter tasks like email later, and take a walk to the dining car now and then to stretch.
U!: Thanks. Trains are basically my only option anyway: I stopped flying completely a couple of years ago and go everywhere from Cologne by rail now. The upside is that I get to see places like Vienna, where I can spend hours just wandering around looking at the Art Nouveau buildings. That's honestly my favourite thing to do in any city.
A: Vienna is a wonderful place for that. The Secession Building, Otto Wagner's station pavilions and his apartment houses on the Linke Wienzeile, and the Postal Savings Bank are highlights of Viennese Art Nouveau, known there as Jugendstil. If you have a free afternoon, a self-guided walk along the Wienzeile takes in several of them, and the Leopold Museum has a strong collection from the period.
U: Any way to stop my laptop battery dying halfway?
A: Lower the screen brightness, close apps running in the background, turn off Bluetooth and use battery saver mode. Work offline as much as possible, since constantly searching for a weak wifi signal drains power quickly. A compact power bank that supports laptop charging is a good backup for long journeys. Charging fully before you board helps too.
""")],
    ),
    Spec(
        qid="lmh-015", qtype="single-session-preference",
        question="Can you recommend a game to play this weekend?",
        answer="The user would prefer a cooperative game on the Nintendo Switch that they and "
               "their girlfriend can play together on the same TV (for example It Takes Two, "
               "Overcooked 2, Snipperclips or Kirby and the Forgotten Land), not a competitive "
               "game and nothing scary or horror-themed.",
        asked="2023/07/14 21:40", start="2023/01/10", avoid=frozenset({"games"}),
        evidence=[Evidence("2023/04/08 22:00", "tech", """
U: I just got a new TV and the picture looks weird, like a soap opera. How do I fix that?
A: That smooth, soap-opera look comes from motion smoothing, also called motion interpolation, which many TVs switch on by default. Look in the picture settings for names like Motion Smoothing, TruMotion, Auto Motion Plus or Motionflow, and turn it off or to its lowest setting. Switching the picture mode to Movie, Cinema or Filmmaker Mode usually disables it automatically and gives more accurate colours as well.
U!: That fixed it. We'll mostly be playing on the Switch on it in the evenings. My girlfriend and I only play together, and we're strictly co-op people: competing against each other ends in sulking, and anything scary or horror-themed is a no for both of us. Should I change any settings for gaming?
A: Yes, turn on Game Mode for the HDMI input the Switch uses, which reduces input lag and makes the controls feel more responsive. Some TVs detect consoles automatically through a setting called Auto Low Latency Mode. Set the Switch's TV output to its highest resolution, and check that its RGB range matches the TV's setting, so dark scenes do not look washed out.
U: Great, thanks!
A: Enjoy it. If the sound feels thin, a basic soundbar is a worthwhile upgrade for both games and films, and most connect with a single HDMI cable. It is also worth updating the TV's software once it is connected to the internet, since updates often fix small picture and sound issues, and registering it for the warranty while the box is still to hand.
""")],
    ),
    Spec(
        qid="lmh-016", qtype="single-session-preference",
        question="I'm finally replacing my old headphones. What would you recommend?",
        answer="The user would prefer over-ear headphones rather than in-ear buds (buds make their "
               "ears ache), with soft cushions and a gentle clamp that are comfortable with "
               "glasses, good active noise cancelling for flights, and full Android support (an "
               "Android companion app and codecs such as LDAC or aptX), not Apple-only features.",
        asked="2024/08/20 13:15", start="2024/02/01", avoid=frozenset({"tech"}),
        evidence=[Evidence("2024/05/11 10:30", "travel", """
U: I'm flying to Vancouver to see my cousins in July, and it's a ten-hour flight. How do I make it less miserable?
A: A few things help a lot on long flights. Choose an aisle seat if you like to get up often, or a window if you want to sleep. Wear loose layers and compression socks, drink water regularly and go easy on alcohol. Walk the aisle every hour or two and do ankle circles in your seat. Bring a neck pillow, an eye mask, snacks you like, and downloaded films or podcasts, since in-flight entertainment can be hit and miss.
U!: The noise is the worst part for me. I can't wear in-ear buds for more than an hour because they make my ears ache, and most big headphones pinch because I wear glasses. Is there any trick for the engine drone?
A: Engine drone is low-frequency noise, which active noise cancelling handles particularly well. Since earbuds hurt, over-ear headphones with large, soft cushions and a gentle clamp are the better type for you; some models are known for sitting comfortably over glasses arms. Thin-framed glasses also help. Even without cancelling, playing soft brown noise at low volume can mask the drone and make the flight feel calmer.
U!: Good to know. Whatever I use has to work properly with my Android phone, I don't use any Apple stuff.
A: Most headphones work with Android over Bluetooth, but some features and codecs are optimised for one platform, so check that the companion app is available for Android and that the headphones support codecs such as LDAC or aptX if you care about sound quality. Fast pairing and multipoint connection are useful if you switch between a phone and a laptop.
""")],
    ),
    Spec(
        qid="lmh-017", qtype="single-session-preference",
        question="It's our anniversary next week. Where do you think we should go for dinner?",
        answer="The user would prefer a quiet, small, family-run restaurant where they can "
               "actually talk, rather than a loud, trendy place, with good fish and vegetarian "
               "dishes, since they are pescatarian.",
        asked="2023/05/25 17:00", start="2022/12/01", avoid=frozenset({"food"}),
        evidence=[Evidence("2023/02/27 20:40", "food", """
U: I'm cooking for friends on Saturday and I have no idea about wine. How do I pick a bottle to go with dinner?
A: A few simple rules go a long way. Match the weight of the wine to the weight of the food: light dishes with lighter wines, rich dishes with fuller ones. Acidic wines pair well with acidic food like tomato sauces or lemony dishes. Regional pairings are a safe bet, such as an Italian red with Italian food. When in doubt, choose something versatile, like a dry Riesling, a Pinot Noir or a good sparkling wine.
U!: I'm doing a big seafood stew. I've been pescatarian for about six years, so it's always fish or veg at mine. What would go well?
A: With a seafood stew, a crisp white with good acidity is a great match: Albariño, Picpoul de Pinet, Vermentino or a dry Provence rosé. If the stew is tomato-based and rich, a light red such as a chilled Pinot Noir or a Beaujolais also works. Avoid heavy, oaky reds, which can make fish taste metallic.
U!: Thanks. By the way, we went to the new tapas place downtown for my birthday last week and I hated it, it was so loud I couldn't hear anyone across the table. I'm much happier in small family-run places where you can actually have a conversation.
A: That is a very common complaint about busy new restaurants, since hard surfaces and open kitchens make noise bounce around. Smaller, family-run places often have a calmer atmosphere and more personal service. When booking somewhere new, asking for a corner table or an early sitting can make a big difference, and some review sites mention noise levels.
""")],
    ),
    Spec(
        qid="lmh-018", qtype="single-session-preference",
        question="Could you suggest a few day hikes I could do this autumn?",
        answer="The user would prefer walks that start and finish at a train station or bus stop, "
               "since they do not drive and live in Sheffield (for example Peak District routes "
               "from Hope Valley line stations such as Edale, Hathersage or Grindleford), with no "
               "scrambling or exposed ridges because heights make them dizzy, and ideally with a "
               "waterfall or a lake to stop at for lunch.",
        asked="2024/09/30 08:40", start="2024/03/01",
        avoid=frozenset({"car", "fitness", "home-city", "travel"}),
        evidence=[Evidence("2024/06/17 19:20", "shopping", """
U: I need new walking shoes for day hikes. Should I get boots or trail shoes?
A: For most day hikes on well-maintained paths, trail shoes or light hiking shoes are comfortable and need little breaking in. Boots offer more ankle support and protection on rocky, uneven or wet ground, and when carrying heavy loads. If your routes are mostly good paths in dry weather, trail shoes are usually the better choice; for muddy moorland and rough ground, a waterproof mid boot is worth it. Try them on in the afternoon with the socks you will hike in.
U!: Mostly paths. I'm a bit limited, though: I live in Sheffield and don't drive, so every walk has to start and finish at a train station or bus stop, and I get dizzy on exposed edges, so anything with scrambling or narrow ridges is out. My favourite walks are ones with a waterfall or a lake where I can stop for lunch.
A: Then light hiking shoes with good grip should suit you well. Linear walks between two stations are a great way to use public transport, because you do not need to loop back to a car. Many rail lines through hill country have stations close to waymarked paths, and valley and waterside routes usually avoid exposure while still giving lovely views.
U: What socks are best?
A: Merino wool or synthetic hiking socks wick moisture and reduce blisters far better than cotton. Make sure they fit snugly without wrinkles, and carry a spare pair on longer walks, especially if the paths are wet. Liner socks under a thicker pair help some people who blister easily. Break in the new shoes on a couple of short local walks first.
""")],
    ),
    # -- multi-session ------------------------------------------------------
    Spec(
        qid="lmh-019", qtype="multi-session",
        question="How much have I raised for the hospice in total this year?",
        answer="£935: £340 from the New Year's Day sea dip, £185 from the bake sale at work and "
               "£410 from the pub quiz night.",
        asked="2024/07/08 20:00", start="2023/12/01",
        evidence=[
            Evidence("2024/01/15 09:40", "health", """
U: I've had a streaming cold for a week. Is it true that cold water swimming can make you ill?
A: A short cold dip does not give you a cold, since colds are caused by viruses, not by low temperatures. Sudden cold exposure does stress the body, though, and staying chilled for a long time afterwards can leave you feeling run down. Warming up gradually after a dip, with dry layers, a hat and a hot drink, is the best way to recover, rather than jumping straight into a very hot shower.
U!: Ha, that's exactly what my mum said. I did the New Year's Day sea dip at Whitley Bay for St. Cuthbert's Hospice, who looked after my grandad, and raised £340 in sponsorship, and I've been sniffly ever since.
A: Well done on raising so much for the hospice. The timing is probably just coincidence: winter is peak season for colds, and crowds at events and on public transport are more likely culprits than the sea itself. Rest, fluids and paracetamol or ibuprofen for aches are all most colds need. See a doctor if you develop a high fever, trouble breathing, or symptoms that last beyond ten days.
U: Should I avoid exercise until it's gone?
A: A common rule of thumb is the neck check: if your symptoms are only above the neck, such as a runny nose or mild sore throat, light exercise is usually fine. If you have a fever, chest congestion or body aches, rest until you feel better, then ease back in gradually.
"""),
            Evidence("2024/04/14 18:25", "cooking", """
U: What bakes sell really well at a bake sale? I want things that are easy to make in big batches.
A: Traybakes are ideal, because one tin gives 16 to 24 portions and they are easy to transport. Brownies, flapjacks, lemon drizzle squares, rocky road and millionaire's shortbread are reliable sellers. Cupcakes with bright icing attract children, and big cookies sell well at a round price. Wrap individual pieces or use paper cases so people can grab them easily, and make a clear price list.
U!: The one we ran at work on Friday made £185 for the hospice again, and the brownies sold out in twenty minutes, so I'm already planning the next one. What else could I add?
A: Congratulations, that is a great result. Adding a few savoury options often boosts sales, especially at lunchtime: cheese scones, sausage rolls, mini quiches or spinach and feta pastries. A gluten-free and a vegan option make sure everyone can buy something. Label the main allergens on each item, and consider selling slices of a large celebration cake, which looks impressive on the table.
U: How should we price things?
A: Keep prices in round numbers so change is easy, and offer a small deal, such as three items for a set price. Many sellers also put out a donation jar and card reader, since people often pay more than the price when the cause is clear. A small sign explaining what the money will fund also encourages people to give a bit more.
"""),
            Evidence("2024/06/09 21:00", "events", """
U: I hosted a charity quiz night at our local pub last night. I want to send a thank-you message to everyone who came and to the pub. Can you help me draft it?
A: Of course. A good thank-you message is short, warm and specific: thank people for coming, mention the atmosphere or a highlight, say what the money will do, and thank the venue and anyone who donated prizes. Share the total if you know it, since people love hearing what they helped achieve. If you tell me the cause, the total and any names you want to mention, I can write a draft.
U!: Please mention the total: the quiz raised £410 for St. Cuthbert's Hospice, which is amazing for a Saturday night in a pub. The Fox and Lantern gave us the back room for free.
A!: Here is a draft: Thank you so much to everyone who came to the quiz night at the Fox and Lantern on Saturday. Between the entry fees, the raffle and your generous donations, we raised £410 for St. Cuthbert's Hospice, which will go straight towards caring for patients and their families. A huge thank you to the Fox and Lantern for giving us the back room for free, and congratulations to the winning team. See you at the next one!
U: That's great, thank you.
A: You are welcome. Sending it within a couple of days, while the evening is still fresh, makes it feel more personal, and a photo of the teams makes a nice addition if people are happy to be shared. You could also post it on the pub's social media page or in the local community group, so people who could not come see what was raised and hear about the next event.
"""),
        ],
    ),
    Spec(
        qid="lmh-020", qtype="multi-session",
        question="Which cities did I go to on business trips this year?",
        answer="Rotterdam (the supplier's plant, April), Lyon (a trade fair, June) and Kraków "
               "(the company's office, September).",
        asked="2023/10/26 09:15", start="2023/03/01", avoid=frozenset({"travel", "job"}),
        evidence=[
            Evidence("2023/04/19 22:30", "health", """
U: I never sleep well in hotels. Any tips?
A: Many people sleep badly on the first night in a new place, a well-known effect where part of the brain stays more alert in unfamiliar surroundings. Bringing familiar things helps: your own pillowcase, earplugs, an eye mask and the same bedtime routine you use at home. Set the room cool, close the curtains fully, and put your phone away for the last half hour. A white noise app can mask corridor sounds.
U!: I just got back from three days at our supplier's plant in Rotterdam for work and I think I slept maybe four hours a night. The room faced a busy road.
A: That would make anyone tired. When you book, ask for a quiet room on a higher floor, facing away from the street and away from the lifts and ice machines. Most hotels will try to accommodate the request if you ask in advance. Good foam earplugs, inserted properly, cut traffic noise a lot, and a fan or white noise covers what is left.
U: I'll try that next time.
A: Also keep caffeine to the morning on travel days, and if you cannot sleep, get up and read in dim light for a while rather than lying there checking the time. A short walk in daylight when you arrive helps your body settle into the new place, and keeping the room cool, around 18 degrees Celsius, makes a noticeable difference to sleep quality.
"""),
            Evidence("2023/06/28 13:10", "food", """
U!: I brought back a whole bag of cheese from the trade fair I was at in Lyon for work last week: a Saint-Marcellin, some Comté and a Beaufort. How do I store them so they don't go off before I can eat them?
A: Wrap each cheese separately in wax paper or cheese paper, then loosely in a bag, so it can breathe without drying out; cling film traps moisture and makes cheese sweat. Keep them in the vegetable drawer, which is a little warmer and more humid than the rest of the fridge. Soft cheeses like Saint-Marcellin are best eaten within a week, while hard cheeses such as Comté and Beaufort keep for several weeks.
U: Can I freeze the hard ones?
A: You can, but freezing changes the texture, making hard cheese more crumbly. It is fine for cooking, for example grated into a gratin or a fondue, but not ideal for a cheese board. Cut it into blocks, wrap it tightly and use it within two or three months.
U: How long should I take them out before eating?
A: Take cheese out about an hour before serving so it comes to room temperature, which brings out much more flavour and aroma. Only take out what you plan to eat, since repeated warming and chilling shortens its life. Hard cheeses with a natural rind can be kept with the rind on, and a fresh piece of paper each time you rewrap them keeps them in better condition.
"""),
            Evidence("2023/09/14 20:45", "job", """
U!: I have to write a trip report after visiting our Kraków office last week. My manager wants it by Monday. How should I structure it?
A: A clear trip report usually fits on one or two pages. Start with the purpose of the trip and the dates, then a short summary of the outcome in two or three sentences, so a busy reader gets the point immediately. Follow with the key findings or decisions, any problems or risks you noticed, and a list of agreed actions with owners and deadlines. Attach meeting notes or slides as an appendix rather than putting everything in the main text.
U: Should I include the expenses in it?
A: Usually expenses go through a separate claim process, so only mention them if your manager asked for a cost summary. A single line with the total can be useful context, but keep receipts and itemised costs in the expense system. If the trip led to any costs or savings for the business, such as a new agreement, those are worth a mention, since they show the value of the visit.
U: OK, I'll keep it short then.
A: Short is good. Writing the summary last, once you have listed everything else, often makes it easier to see what really mattered. Send it a day early if you can, and offer to talk through any points your manager wants more detail on. Reports that finish with clear next steps tend to get read and acted on.
"""),
        ],
    ),
    Spec(
        qid="lmh-021", qtype="multi-session",
        question="How many hours a week do I spend volunteering altogether?",
        answer="4.5 hours: three hours at the food bank on Saturday mornings (9 to 12) and an hour "
               "and a half as a reading helper at the primary school on Wednesday afternoons.",
        asked="2024/03/14 19:00", start="2023/09/15",
        evidence=[
            Evidence("2023/11/05 14:15", "food", """
U: I'm putting together a few recipe cards with cheap, filling meals that use tinned and dried food. Can you suggest some?
A: Here are some reliable ones built around common store-cupboard ingredients:
- Lentil and tomato soup with onion, carrot and a stock cube
- Chickpea and spinach curry with tinned tomatoes and rice
- Tuna pasta bake with sweetcorn and a simple white sauce
- Bean chilli with kidney beans, tinned tomatoes and spices
- Savoury rice with frozen peas, egg and soy sauce
Each serves four for very little money and can be adapted to what is available.
U!: Perfect. They're for the food bank where I volunteer every Saturday morning, I do the 9 to 12 shift sorting donations, and we want to hand out recipe cards with the parcels. Can you make them really simple?
A: Good idea, because simple cards are much more likely to be used. Keep each card to one side: a short list of ingredients, five or six numbered steps with short sentences, the cooking time, and a line on how to store leftovers. Avoid specialist equipment and assume only a hob and one pan. Adding a small picture and suggesting swaps, such as any tinned beans, helps people use whatever is in their parcel.
U: Should we translate them?
A: If many visitors speak other languages, translating the most popular cards into two or three of them is a kind touch. Ask volunteers or local community groups for help, and keep the layout the same so they are easy to match. Pictures of the key steps also help anyone who finds reading difficult, whatever their language.
"""),
            Evidence("2024/01/17 16:40", "kids", """
U: How can I help a child who hates reading aloud and gets embarrassed when he stumbles over words?
A: Take the pressure off first. Let him choose the book, even if it seems easy or is about a favourite game or sport, and try taking turns reading pages or sentences so he is not performing alone. Praise effort and self-correction rather than only accuracy. When he gets stuck, give him a few seconds, then simply tell him the word and move on, so the story keeps flowing.
U!: He's one of the kids I see as a volunteer reading helper at the primary school down the road. I started this month, and I go in every Wednesday afternoon for an hour and a half.
A: That is a lovely thing to do, and regular time with the same adult can make a real difference to a reluctant reader. Keep sessions predictable and positive: a quick chat, some reading together, and a few minutes talking about the story or the pictures. Ask his teacher which books suit his level and whether there are particular sounds or words he is working on, so your sessions support what happens in class.
U: Any games that help?
A: Word hunts in the book, quick rhyming games and reading silly sentences together make practice feel less like a test. A short reward, such as choosing the next book, also keeps motivation up. Reading to him for a few minutes at the end of each session, so he can simply enjoy a story, reminds him why reading is worth the effort. Keep a short note of what you read each week so the next session can build on it.
"""),
        ],
    ),
    Spec(
        qid="lmh-022", qtype="multi-session",
        question="Which board games have I bought this year?",
        answer="Three: Wingspan, Cascadia and The Crew.",
        asked="2023/12/20 21:00", start="2023/05/01", avoid=frozenset({"games"}),
        evidence=[
            Evidence("2023/06/03 15:30", "games", """
U!: I bought Wingspan last weekend and I love it, but my parents are coming over tomorrow and they're not big gamers. How do I teach it without overwhelming them?
A: Wingspan looks complex at first, but it teaches well if you keep it simple. Explain the goal in one sentence, then the four actions: play a bird, gain food, lay eggs or draw cards, and point out that each row gets stronger as birds are added. Skip the end-of-round goals and bonus cards for the first game, or play them face up and open, so everyone can help each other.
U: Should we play with open hands?
A: For a first game, yes. Playing with cards visible lets you give suggestions and shows how the engine builds, which is the fun part of Wingspan. After a round or two, most people are happy to play normally. Keep the rulebook handy for the bird powers, but resist explaining every card in advance; people learn them naturally as they play them.
U: How long does a game take?
A: A first game with new players usually takes 60 to 90 minutes, including the explanation. Once everyone knows the rules, a game with three or four players tends to take about 45 to 60 minutes. Setting up the birdfeeder dice tower and sorting the food tokens before your parents arrive saves time, and a quick practice round of two turns each is a good way to start.
"""),
            Evidence("2023/08/26 10:05", "travel", """
U: We're renting a cottage in the Lake District with five friends next week. Any ideas for rainy-day activities?
A: The Lakes are beautiful in the rain if you plan for it. Good options include a lake cruise on Windermere or Ullswater, the pencil museum in Keswick, the World of Beatrix Potter in Bowness, a short walk to a waterfall such as Aira Force, which is even more impressive after rain, and a long pub lunch. Back at the cottage, cooking a big dinner together and a stack of games make a rainy evening cosy.
U!: Board games are definitely happening, I picked up Cascadia on Thursday specifically for this trip. What else would a group of six enjoy?
A: For six people, party-style games work well because everyone plays at once. Codenames and Just One are easy to explain, and a social deduction game like The Resistance is great fun with a group. A deck of cards is also worth packing for simple games like shed or rummy. Pack the games in a waterproof bag in case you carry them back from the pub.
U: Perfect.
A: Have a great week, and bring layers and waterproofs even for short walks, since the weather can change quickly on the fells. Keep an eye on the forecast each morning and save the longer walks for the clearest days; low cloud can roll in quickly, and some paths become slippery after heavy rain.
"""),
            Evidence("2023/11/12 19:50", "job", """
U: I'm organising a games evening for my team at work, about ten people with mixed interest in games. How do I run it so nobody feels left out?
A: Set up several tables with different kinds of games, so people can choose: a quick party game for the chatty crowd, a calmer strategy game, and a cooperative one for people who dislike competition. Have someone at each table who knows the rules, keep the first round short, and rotate players after an hour. Food and drinks on a side table keep things relaxed.
U!: I ordered The Crew for it, since co-op card games seem less intimidating. Is that a good pick for people who don't really play games?
A: Yes, The Crew is a good choice. It is a cooperative trick-taking game, so anyone who has played card games like whist or hearts will pick it up fast, and the missions start very easy and get harder. Because players cannot talk freely about their cards, it creates a lot of laughter without anyone feeling beaten by a colleague. It plays best with four or five people, so it suits one of the tables.
U: Good, thanks.
A: Enjoy the evening. A short round of applause for whoever teaches each game goes a long way. Ending with a quick, silly party game for the whole group brings everyone back together, and asking people afterwards which games they enjoyed helps you plan the next evening.
"""),
        ],
    ),
    Spec(
        qid="lmh-023", qtype="multi-session",
        question="How many nights have I spent camping so far this year?",
        answer="Nine: three at a campsite near Castleton in the Peak District, two wild camping on "
               "Dartmoor and four at a campsite in Brittany.",
        asked="2024/10/03 18:30", start="2024/03/15", avoid=frozenset({"travel"}),
        evidence=[
            Evidence("2024/06/03 20:10", "kids", """
U!: We got back on Friday from three nights at a campsite near Castleton with the kids, for half-term. They loved it, but they woke up at 5 am every morning because of the light. How do people get kids to sleep in a tent?
A: Early light is the biggest challenge with children in tents in late spring and summer. A tent with blackout bedrooms makes a huge difference, or you can hang a dark blanket or a reflective sheet over the inner tent. Eye masks work for some children. Keeping bedtime routines familiar, with the same book or song, helps them settle, and a warm sleeping bag matters because they wake as the temperature drops before dawn.
U: Their sleeping bags did seem a bit thin.
A: Check the comfort rating on the bags, since children get cold faster than adults. A bag rated for around 5 degrees Celsius, a warm hat, and an insulating mat underneath, not just an airbed, keep them much warmer. Airbeds lose heat to the ground, so a foam mat or a blanket on top of the airbed helps.
U: Good to know for next time.
A: A hot drink and a snack before bed also help children sleep through, and a small torch each makes night-time toilet trips less scary. Let them help with camp jobs during the day, such as collecting water or setting up, which tires them out in a good way. Most children settle better on the second night once the tent feels familiar.
"""),
            Evidence("2024/07/08 19:30", "fitness", """
U!: I did two nights of wild camping on Dartmoor over the weekend with a friend and my shoulders are killing me from the rucksack. Is my pack fitted wrong?
A: Sore shoulders usually mean too much weight is hanging from the shoulder straps instead of sitting on your hips. The hip belt should sit on top of your hip bones and carry most of the load, roughly 70 to 80 percent. Tighten it first, then the shoulder straps, then the load lifters that pull the top of the pack towards you, and finally the chest strap. Check the back length is right for your torso; many packs can be adjusted.
U: It was about 16 kilos in total.
A: That is quite heavy for a two-night trip. Look at the biggest items first: tent, sleeping bag, mat and cooking kit. Sharing a tent and stove with your friend, taking less water when there are streams to filter, and leaving spare clothes at home can often save several kilos.
U: I'll weigh everything next time.
A: A simple spreadsheet of your kit with weights makes it easy to see what to swap or leave behind. Kitchen scales are accurate enough. Once you can see the numbers, it is usually obvious which two or three items to replace first, and a lighter pack makes the walking far more enjoyable.
"""),
            Evidence("2024/08/25 12:40", "cooking", """
U!: We've just got back from four nights at a campsite in Brittany and I'm obsessed with the buckwheat galettes we had every day. Can I make them at home without a special pan?
A: Yes, a large non-stick frying pan works well. The classic batter is 250 grams of buckwheat flour, a pinch of salt, one egg and about 600 milliliters of water, whisked smooth and rested in the fridge for at least two hours, ideally overnight. Heat the pan well, butter it lightly, pour in a thin layer of batter, swirl it to the edges, and cook until the edges crisp and lift.
U: What's the classic filling?
A: The complète is the most famous: ham, grated Emmental or Gruyère and an egg cracked in the middle, with the edges folded into a square so the yolk shows. Other favourites include goat's cheese with honey and walnuts, or sautéed mushrooms and onions. Fold the galette while it is still in the pan so the cheese melts, and serve it straight away.
U: And to drink?
A: In Brittany, dry cider served in a bowl is the traditional partner, and it cuts nicely through the richness of the cheese and butter. For a sweet finish, crêpes made with wheat flour are the dessert version: try them with salted butter caramel, another Breton speciality that is easy to make at home with sugar, butter, cream and a good pinch of sea salt.
"""),
        ],
    ),
    Spec(
        qid="lmh-024_abs", qtype="multi-session",
        question="How much did my swimming lessons cost in total?",
        answer="You never mentioned what the swimming lessons cost. You mentioned a ten-week adult "
               "beginners' course on Tuesday evenings, after which you could swim 25 meters of "
               "front crawl, but not its price.",
        asked="2023/09/28 20:15", start="2023/03/01", avoid=frozenset({"swim", "fitness"}),
        evidence=[
            Evidence("2023/05/03 21:20", "fitness", """
U: My goggles fog up within a few minutes. How do I stop it?
A: Fogging happens when warm, moist air inside the goggles meets the cooler lens. Most new goggles have an anti-fog coating, which wears off if you rub the inside of the lenses, so avoid touching them. A drop of anti-fog spray or a little baby shampoo spread thinly and rinsed off before swimming works well. Rinse the goggles in cold water after each session and let them air dry.
U!: It's driving me mad because I've just started a ten-week adult beginners' course on Tuesday evenings, I never learned to swim properly as a kid, and I can't see the instructor's demonstrations.
A: Good for you for starting. For lessons, clear or lightly tinted lenses are best, since indoor pools are fairly dim. Make sure the goggles fit well: press them to your face without the strap, and if they stay on for a second, the seal is good. A snug fit means less water gets in, which reduces fogging too.
U: Thanks, I'll try the baby shampoo trick.
A: Good luck with the course. Many adult beginners are surprised how quickly they progress once they feel comfortable putting their face in the water. If the goggles keep fogging, try a pair with a slightly larger lens or a different shape, since fit varies a lot between faces, and ask the instructor, who will have seen every problem before.
"""),
            Evidence("2023/07/19 18:00", "health", """
U!: My swimming course just finished and I can swim 25 meters of front crawl now, which I'm really proud of. But the chlorine is wrecking my hair and skin. What helps?
A: Congratulations, that is real progress. Chlorine strips natural oils, so the trick is to protect first and rinse quickly. Wet your hair with clean water before swimming, since hair that is already saturated absorbs less pool water, and wear a silicone cap. Shower straight after swimming with a gentle shampoo, and use a rich moisturiser on damp skin. Special swimmer's shampoos help remove chlorine residue.
U: My skin gets itchy too.
A: Itchiness after swimming is usually dryness from chlorine. Short, lukewarm showers, a fragrance-free moisturiser applied within a few minutes, and drinking enough water all help. If you get a rash or hives, see a doctor, since a few people react more strongly to pool chemicals. Applying moisturiser before swimming, on skin that is not covered by the swimsuit, also adds a light protective layer.
U: Great, thanks.
A: Keep swimming regularly so you do not lose the technique you have built up; even one session a week helps. Public pools often have adult lanes at quieter times, and setting a small goal, such as 50 meters without stopping, keeps practice focused. Many people go on to an improvers' course once they finish the beginners' one.
"""),
        ],
    ),
    # -- temporal-reasoning -------------------------------------------------
    Spec(
        qid="lmh-025", qtype="temporal-reasoning",
        question="How many days passed between my final interview and my first day at the new job?",
        answer="25 days: the final interview was on Thursday, January 11, 2024 and the first day "
               "was Monday, February 5, 2024.",
        asked="2024/03/20 12:00", start="2023/10/01", avoid=frozenset({"job"}),
        evidence=[
            Evidence("2024/01/08 19:15", "job", """
U!: I've got the final interview for the product designer role on Thursday, January 11, with the head of product. What kind of questions should I expect at this stage?
A: Final interviews with senior leaders usually focus less on skills, which earlier rounds tested, and more on judgement, collaboration and fit. Expect questions about how you handle disagreement with engineers or product managers, a time you changed your mind based on research, how you prioritise when everything seems urgent, and why this company. Prepare two or three stories with a clear situation, what you did and the result, and have good questions ready about the product's direction.
U: Should I bring my portfolio printed?
A: A laptop or tablet with your portfolio ready offline is usually enough, but a short printed case study can be a nice touch in person. Choose one or two projects that best match their product and walk through your process rather than just the final screens. Make sure you can explain the problem, your decisions and the measurable outcome for each project in a couple of minutes.
U: Thanks, that helps.
A: Good luck. Send a short thank-you note afterwards that mentions something specific from the conversation. Keep it to three or four sentences, thank them for their time, and restate briefly why you are excited about the role. Sending it the same day or the next morning is ideal, and it is a good chance to add one thought you forgot to mention.
"""),
            Evidence("2024/02/05 21:05", "job", """
U!: Today was my first day at the new job! Everyone was nice, but I had no idea where to sit at lunch. How do I not be the awkward new person?
A: Congratulations on the new job. Feeling awkward in the first week is completely normal, and most people remember how it felt. Ask someone from your team if you can join them for lunch, or ask your manager who usually eats together. Asking colleagues questions about their work, or for a recommendation for coffee nearby, is an easy way to start conversations.
U: Is it weird to ask my manager for a one-on-one in the first week?
A: Not at all; it shows initiative. Ask for 30 minutes to understand their expectations for your first 90 days, how they like to communicate, and who you should meet early on. Many managers will be glad you asked. Coming with a few questions written down makes the conversation easier, and agreeing on a regular check-in time from the start gives you a natural place to raise things as you settle in.
U: OK, I'll do that tomorrow.
A: Great. Keep a short list of things you learn and questions that come up, so you can bring them to that conversation. In the first few weeks, nobody expects you to know everything, so asking questions is part of the job. It also helps to note the names of people you meet and what they work on, which makes the second conversation much easier.
"""),
        ],
    ),
    Spec(
        qid="lmh-026", qtype="temporal-reasoning",
        question="Which came first this year, repainting the kitchen or getting the new boiler?",
        answer="The new boiler: it was fitted on Friday, June 9, 2023, about six weeks before the "
               "kitchen was repainted on the weekend of July 22-23, 2023.",
        asked="2023/11/08 19:40", start="2023/04/01", avoid=frozenset({"house"}),
        evidence=[
            Evidence("2023/06/12 20:20", "finance", """
U!: We had the old boiler taken out and a new combi boiler fitted on Friday. It cost £3,100, which was a shock. Is there anything I can do now to make it pay for itself faster?
A: A modern condensing combi boiler should already use noticeably less gas than an old one, but a few settings make a big difference. Lower the flow temperature for the radiators to around 55 to 60 degrees Celsius, so the boiler condenses efficiently. Use a programmable thermostat to heat only when you are home, and fit thermostatic radiator valves to keep unused rooms cooler.
U: What about the warranty?
A: Register the boiler with the manufacturer straight away, since many warranties only apply if you register within a set time, often 30 days. Most also require an annual service by a qualified engineer, so keep the paperwork and book the first service for a year from now. Store the manual somewhere easy to find as well.
U: OK, I'll register it tonight.
A: Good idea. Keep the installer's certificate with the warranty documents, since you may need it when you sell the house. Also note the date and the engineer's details for the first service, and check the pressure gauge every few weeks; most combi boilers need it between about 1 and 1.5 bar when cold.
"""),
            Evidence("2023/07/24 18:45", "home", """
U!: We repainted the kitchen over the weekend, a sage green, and it looks great, but there are little paint splatters all over the tiles and the window frame. How do I get them off?
A: Fresh water-based emulsion comes off tiles easily with warm soapy water and a cloth. For dried splatters on glazed tiles, soften them with a damp cloth for a few minutes, then lift them with a plastic scraper or an old credit card. On the window frame, which is likely uPVC or painted wood, use a damp microfibre cloth and gentle pressure; avoid harsh solvents, which can dull the surface.
U: Some are on the grout too.
A: Paint on grout is trickier because grout is porous. Try a stiff toothbrush with warm soapy water first. If that does not work, a grout pen in the original colour can cover small marks neatly. For larger marks, a small amount of grout reviver or a fine grout rake can help, but test it on a hidden area first. Next time, covering tiles with low-tack masking tape and dust sheets before painting saves this job.
U: Thanks, I'll try the card trick.
A: Work slowly at a low angle so you do not scratch the tile glaze, and wipe as you go. Once everything is clean, let the new paint cure for a couple of weeks before scrubbing the walls, since fresh emulsion marks easily. Keep a little leftover paint in a labelled jar for touch-ups later.
"""),
        ],
    ),
    Spec(
        qid="lmh-027", qtype="temporal-reasoning",
        question="How many weeks ago did I begin my sourdough starter?",
        answer="Six weeks ago: it was mixed on Saturday, March 9, 2024.",
        asked="2024/04/20 10:00", start="2023/11/01",
        evidence=[Evidence("2024/03/11 08:30", "cooking", """
U!: I mixed my very first sourdough starter on Saturday with rye flour and water, and this morning it has a few bubbles but smells a bit like cheese. Is that normal?
A: Yes, that is very normal in the first week. A new starter goes through several phases as different bacteria compete, and odd smells, from cheesy to sharp or even like nail polish, are common before the yeast and lactic acid bacteria settle into a stable balance. Early bubbles often come from bacteria rather than yeast, and it is also common for activity to drop for a few days before it picks up again.
U: How often do I feed it?
A: Once a day is a good rhythm at room temperature. Discard all but about 50 grams, then add 50 grams of flour and 50 grams of lukewarm water, and stir well. Rye or wholemeal flour speeds things up. Keep it somewhere warm, ideally around 24 to 26 degrees Celsius. Use a clean jar with a loose lid, and put a rubber band around it after feeding so you can see how much it rises.
U: When can I bake with it?
A: Most starters are ready after one to two weeks, once they reliably double within four to eight hours of feeding and smell pleasantly sour. A spoonful that floats in water is another sign it is active enough. Once it is established, you can keep it in the fridge and feed it once a week, taking it out the day before you bake. Your first loaves may be dense, which is normal while you learn how your starter behaves.
""")],
    ),
    Spec(
        qid="lmh-028", qtype="temporal-reasoning",
        question="Of the weekend city breaks I took this spring, which one was the most recent?",
        answer="Strasbourg (the long weekend of May 25-27, 2024), after Ghent in mid-March and "
               "Maastricht in April.",
        asked="2024/07/02 21:10", start="2024/01/05", avoid=frozenset({"travel"}),
        evidence=[
            Evidence("2024/03/18 19:00", "cooking", """
U!: We spent the weekend in Ghent and I had the most amazing stoofvlees, the beef stew cooked in beer. Can I make it at home?
A: Yes, and it is easier than it tastes. Brown about a kilo of beef chuck in chunks, in batches, then soften two sliced onions in the same pot. Add a tablespoon of flour, a bottle of dark Belgian ale, a little stock, a bay leaf, thyme, a spoonful of mustard, and a slice of bread spread with more mustard on top, which dissolves and thickens the sauce. Simmer gently for two and a half to three hours.
U: What beer should I use?
A: A brown or dark ale with some sweetness works best, such as a Flemish brown or a dubbel. Avoid very hoppy beers, which turn bitter when cooked for a long time. A spoonful of brown sugar or apple syrup balances any sharpness. Belgian cooks often use a beer they would happily drink alongside the meal, which is a good rule to follow.
U: And to serve?
A: Fries are the classic Belgian partner, with mayonnaise on the side, but mashed potatoes or crusty bread also work well. Like most stews, it tastes even better the next day, so it is a great make-ahead dish for guests. Serve it with the same beer you cooked with, and a simple green salad to balance the richness.
"""),
            Evidence("2024/04/22 20:30", "photo", """
U!: I took about 300 photos on our weekend in Maastricht and most of them look a bit flat and grey. How can I make them pop without overdoing it?
A: Flat photos usually need a little contrast and colour, not dramatic filters. In your editing app, start with exposure and white balance, then raise contrast slightly and adjust highlights and shadows so the sky keeps detail and dark areas are not muddy. A small increase in vibrance, rather than saturation, boosts muted colours without making skin look orange. Straighten the horizon and crop distractions.
U: Should I edit all 300?
A: No, pick your favourite 20 or 30 first. Many apps let you copy the edits from one photo and paste them onto others taken in the same light, which saves a lot of time. Working through the best photos first also makes it easier to put together an album or a short slideshow of the weekend while the memories are still fresh.
U: Good idea.
A: Once you have a look you like, save it as a preset so future trips are faster to edit. Keep the edits subtle: if you compare the before and after and the change is obvious at a glance, it is probably too strong. Back up the originals before editing so you can always start again.
"""),
            Evidence("2024/05/27 17:15", "health", """
U!: I walked about 25,000 steps a day during our long weekend in Strasbourg and now I have a huge blister on my heel. Should I pop it?
A: It is generally best not to pop a blister if you can avoid it, since the skin on top protects against infection. Cover it with a blister plaster or a padded dressing to reduce friction. If it is very large and painful, you can drain it with a sterilised needle at the edge, leave the skin in place, and cover it. Watch for redness, warmth or pus, which are signs of infection that need a doctor.
U: How do I stop it happening again?
A: Wear shoes you have already walked in for a while, with moisture-wicking socks rather than cotton. Put a plaster or tape on hotspots as soon as you feel rubbing. Keeping your feet dry, changing socks at midday on long walking days, and trimming toenails before a trip also help. Lambswool or gel pads can protect areas that rub often.
U: Thanks.
A: Rest your feet for a couple of days if you can, and let it heal. Change the dressing if it gets wet or dirty, and let the area air out at night. Most blisters heal within a week, and the new skin underneath toughens quickly once the top layer comes away.
"""),
        ],
    ),
    Spec(
        qid="lmh-029", qtype="temporal-reasoning",
        question="How long did I wait to get my allotment plot?",
        answer="About eight months (241 days): I joined the council waiting list on March 6, 2023 "
               "and was given plot 14 on November 2, 2023.",
        asked="2024/01/15 09:30", start="2023/02/01", avoid=frozenset({"garden"}),
        evidence=[
            Evidence("2023/03/06 19:05", "garden", """
U!: I added my name to the council's allotment waiting list today. They said it could be a long wait. In the meantime, what can I grow on a sunny windowsill?
A: A sunny windowsill is great for herbs and small crops. Basil, parsley, chives and coriander grow well in pots, as do salad leaves and pea shoots, which you can harvest in a few weeks. Chilli peppers and cherry tomatoes can also be grown indoors in a very sunny spot, ideally south-facing. Use pots with drainage holes, good compost, and turn them regularly so they do not lean towards the light.
U: Can I start vegetable seeds there for later?
A: Yes, many gardeners start seeds indoors in spring. Tomatoes, peppers, courgettes and squash can be sown in small pots and moved outside later. Even without an allotment yet, you could grow them on in large containers. A cheap propagator or a clear plastic bag over the pots keeps the seeds warm and moist until they sprout, and a light seed compost gives them the best start.
U: Good idea.
A: Keep notes on what you grow and when, which will be useful once you get a plot. Visiting the allotment site and chatting to plot holders is worthwhile too: they will know what grows well in the local soil, and some sites let people on the waiting list help out or share a plot in the meantime.
"""),
            Evidence("2023/11/02 12:20", "garden", """
U!: The council rang this morning and we've been given plot 14 at the allotments! It's completely overgrown with brambles and couch grass. Where do I even start?
A: Congratulations. Do not try to clear it all at once. Cut everything down first with shears or a strimmer, then dig out the bramble roots, since they regrow from the crowns. For couch grass, fork out as many roots as you can. Cover the areas you will not cultivate this winter with thick cardboard or weed membrane, which will weaken the weeds by spring.
U: What can I plant in winter?
A: Garlic and broad beans can go in during autumn, as can some onion sets. Otherwise, use the winter to plan beds and paths and build a compost bin. A simple sketch of the plot with the sunny areas, the water point and where you want a shed or compost bays will save a lot of time in spring.
U: Great, thanks.
A: Clear one bed properly first so you have a productive space in spring. Many new plot holders try to clear everything at once and burn out by March. Ask neighbouring plot holders for advice, since most are happy to share tips and often spare seedlings, and check the site rules on bonfires and sheds before you start.
"""),
        ],
    ),
    Spec(
        qid="lmh-030", qtype="temporal-reasoning",
        question="How many weeks were there between passing my driving theory test and passing my "
                 "practical test?",
        answer="Ten weeks (70 days): the theory test was passed on Friday, May 17, 2024 and the "
               "practical test on Friday, July 26, 2024.",
        asked="2024/08/12 17:00", start="2024/02/01", avoid=frozenset({"car", "travel"}),
        evidence=[
            Evidence("2024/05/17 13:40", "car", """
U!: I passed my driving theory test this morning on the first try! How many lessons do people usually need before the practical test?
A: Congratulations. The number of lessons varies a lot, but many learners need around 40 to 50 hours of professional instruction, plus private practice if they can get it. Your instructor is the best judge of when you are ready. Book the practical test early if waiting lists are long, since you can always move the date.
U: My instructor says I'm nervous at roundabouts. Any tips?
A: Roundabouts feel easier with a routine: slow down early, choose your lane from the signs, look right early to judge gaps, and be ready to go rather than stopping if it is clear. Practising the same roundabout repeatedly builds confidence quickly. Ask your instructor to talk you through a few busy ones from the passenger seat first, so you can watch how they read the traffic.
U: Thanks, I'll ask to practise more of them.
A: That is a good plan. Most nervous learners find that roundabouts become routine after a few focused sessions. Practising in a quiet area early on a Sunday, with a friend or family member who is allowed to supervise, is a good way to repeat the same junctions without pressure between lessons.
"""),
            Evidence("2024/07/27 10:10", "car", """
U!: I passed my practical driving test yesterday! But now I'm terrified of driving alone. How do I build confidence?
A: Congratulations. Nerves after passing are very common. Start with short, familiar routes at quiet times, such as early on a weekend morning, and gradually add busier roads, new places and night driving. Taking an experienced driver with you for the first few longer trips helps too. Plan routes before you set off, so you can concentrate on the road rather than directions.
U: Should I take extra lessons on motorways?
A: Yes, many new drivers find it worthwhile, since learners often get little motorway practice. A couple of lessons with an instructor on joining, overtaking and leaving a motorway builds confidence quickly. Dual carriageways are a good step in between, and driving at quieter times for the first few motorway trips makes it much less stressful.
U: OK, I'll book one.
A: Good idea. Also check your insurance options, since some insurers offer lower premiums with a telematics box. Many insurers also offer discounts after additional training courses. Keep a safe following distance, avoid distractions such as your phone, and give yourself extra time on journeys for the first few months.
"""),
        ],
    ),
    # -- knowledge-update ---------------------------------------------------
    Spec(
        qid="lmh-031", qtype="knowledge-update",
        question="What's my monthly rent at the moment?",
        answer="£1,240 a month (it went up from £1,150 when the lease was renewed in April "
               "2024).",
        asked="2024/05/30 19:45", start="2023/07/01",
        avoid=frozenset({"budget", "housing", "moving"}),
        evidence=[
            Evidence("2023/09/10 20:00", "finance", """
U: Can you help me set up a simple monthly budget? We both get paid on the 25th.
A: Sure. Start by listing your combined take-home pay, then your fixed costs, such as rent, bills, transport and insurance. Next, estimate variable spending, such as groceries, eating out and entertainment, from the last two or three months of bank statements. Finally, decide on savings as a fixed amount transferred on payday, before you spend anything else.
U!: Our biggest fixed cost is rent, £1,150 a month for the two-bed, then around £300 for bills and council tax, and we spend far too much on takeaways.
A: That gives you a clear picture of your fixed costs. For takeaways, set a monthly amount rather than banning them, and plan two or three quick meals for tired evenings so it is easier to cook. Tracking spending for a month often shows where money goes. Meal planning for the week on a Sunday also makes takeaways less tempting.
U: OK, that sounds doable.
A: A simple spreadsheet or budgeting app works well. Review it together once a month. Use categories that match how you actually spend, and keep a small buffer for irregular costs like birthdays, car repairs or annual subscriptions. After two or three months you will know your real numbers, and can decide how much to move to savings each payday.
"""),
            Evidence("2024/03/04 18:20", "home", """
U!: Our landlord just renewed our lease for another year, but the rent is going up to £1,240 a month from April. Is that a normal rise? Can we push back?
A: That is a rise of about 8 percent, which is in line with many areas recently, though it depends on local market rents. Check what similar flats nearby are advertised for. If the new rent is above market or you have been good tenants, it is reasonable to negotiate politely, for example by offering a longer lease or asking for a smaller increase.
U: What should I say?
A: Keep it friendly and factual: mention how long you have lived there, that you pay on time and look after the place, and include a few comparable listings. Ask whether the landlord would accept a smaller increase, say half, in return for a longer tenancy, which gives them security and saves re-letting costs. Check your lease and local rules on how and when rent can be increased.
U: I'll write to him this week.
A: Put the agreement in writing once you settle on an amount. If you cannot reach a compromise, you can still decide whether the new rent is worth it compared with the cost and hassle of moving, which is often considerable. Give yourself enough time to look around before the new rent starts.
"""),
        ],
    ),
    Spec(
        qid="lmh-032", qtype="knowledge-update",
        question="What's the heaviest deadlift I've managed so far?",
        answer="105 kg (up from being stuck at 90 kg in the spring).",
        asked="2023/12/18 07:50", start="2023/03/15", avoid=frozenset({"fitness"}),
        evidence=[
            Evidence("2023/05/08 12:40", "food", """
U: What are some high-protein snacks I can keep at my desk?
A: Good shelf-stable options include roasted chickpeas or edamame, unsalted nuts, jerky, protein bars with a short ingredient list, and single-serve tins of tuna or salmon. If there is a fridge at work, Greek yogurt, cottage cheese, boiled eggs and cheese portions are easy protein sources. Pairing protein with some fruit or wholegrain crackers makes a snack more filling.
U!: I've been lifting for about a year and my deadlift has been stuck at 90 kg for months, so a friend told me I'm probably not eating enough protein.
A: Protein can play a part, and many people who lift aim for about 1.6 grams per kilogram of body weight per day, spread across meals. A plateau usually has several causes, though, such as programming, recovery and sleep. Eat enough overall calories and get seven to nine hours of sleep. Deloading for a week, with lighter weights, can also help you break through.
U: I'll track my protein for a week.
A: That is a good start. Tracking for a week gives you a realistic baseline. Many people are surprised how uneven their intake is, for example little protein at breakfast. Adding eggs, yogurt or a protein-rich lunch is often enough to close the gap without supplements.
"""),
            Evidence("2023/10/15 11:30", "fitness", """
U!: Finally pulled 105 kg on the deadlift on Friday! I want to keep progressing. Should I change my program?
A: Congratulations. If your current program is still giving results, keep it for now. When progress slows again, try a program with planned variation, such as heavy, medium and light days, or waves of sets at different intensities. Add accessories such as Romanian deadlifts, rows and hip thrusts.
U: How often should I deadlift?
A: Once or twice a week is typical for most intermediate lifters. Deadlifts are demanding, so many people do one heavy day and one lighter day with a variation. Listen to your lower back and grip: if they feel fatigued, reduce the volume for a week. Good sleep and enough food matter just as much as the program itself.
U: Thanks.
A: Film a set now and then to check your form as the weight goes up. Watching it back from the side shows whether your back stays neutral and the bar travels close to your legs. If the form breaks down, stay at that weight until it is solid again before adding more.
"""),
        ],
    ),
    Spec(
        qid="lmh-033", qtype="knowledge-update",
        question="What is my current rating on the online chess site?",
        answer="1342 in rapid on Lichess (up from 1180 in March 2024).",
        asked="2024/11/04 20:20", start="2024/01/15", avoid=frozenset({"games"}),
        evidence=[
            Evidence("2024/03/02 10:50", "kids", """
U: My nephew is eight and wants me to teach him chess. How do I make it fun?
A: Start small. Teach one piece at a time with mini-games, such as pawn wars where only pawns are on the board and the first to reach the other side wins. Then add the other pieces one by one. Keep games short, let him win some, and celebrate clever moves.
U!: I'm only an average player myself, my rapid rating on Lichess is 1180, so I don't want to teach him bad habits.
A: That is more than enough to teach a beginner. The basics matter most: how pieces move, checkmate, and simple principles like developing pieces and protecting the king. Explaining ideas to him will also make you think about them more clearly, which often improves your own play. Keep the focus on enjoyment rather than perfect moves.
U: Good point.
A: You could also play puzzles together, which are fun and build tactics. There are lots of child-friendly chess apps and books with colourful puzzles and stories. Short sessions of 20 to 30 minutes are best at his age, and letting him teach you a move he has learned keeps him motivated.
"""),
            Evidence("2024/08/19 21:40", "games", """
U!: I finally broke through on Lichess: my rapid rating is 1342 now, after being stuck around 1200 for ages. What should I study next to keep climbing?
A: Congratulations. At that level, keep doing daily tactics puzzles, and start studying endgames more seriously: king and pawn endings and basic rook endings come up in many games. Review your losses to find patterns. Look at whether you lose more often in the opening, the middlegame or the endgame, and focus your study there.
U: Should I switch to longer games?
A: Longer games, such as 15 plus 10 or 30 minutes, give you time to think and learn. Mix them with rapid for variety. Taking a moment to check for your opponent's threats before every move, a simple habit called blunder checking, is one of the quickest ways to gain points at your level.
U: Thanks.
A: Good luck with the next hundred points. Progress is rarely smooth, so expect plateaus and the occasional drop. Keeping a simple log of what you study and reviewing a few of your best wins, not just the losses, helps you stay motivated.
"""),
        ],
    ),
    Spec(
        qid="lmh-034", qtype="knowledge-update",
        question="How many hours a week am I working now?",
        answer="32 hours (a four-day week, Monday to Thursday, since November 2023; before that "
               "40 hours).",
        asked="2024/02/22 13:30", start="2023/06/01", avoid=frozenset({"job", "routine"}),
        evidence=[
            Evidence("2023/08/21 21:10", "health", """
U: I feel exhausted by Friday every week. Is there anything I can change?
A: End-of-week exhaustion usually builds from small things: short sleep during the week, skipped breaks, and little time to recover in the evenings. Look at your sleep first, aiming for a consistent bedtime. Short breaks away from the screen, a walk at lunch, and protecting at least one evening a week for something restful all help.
U!: I do a standard 40-hour week, 9 to 5:30 with a lunch break, but it's back-to-back video calls, and by Thursday I'm done.
A: Back-to-back video calls are especially draining, because you have to concentrate on faces and screens without natural pauses. Try to end meetings five minutes early, turn off self-view, and block at least one hour a day for focused work without calls. Suggesting shorter default meeting lengths, such as 25 or 50 minutes, gives everyone a few minutes to move around between calls.
U: I'll try blocking the calendar.
A: Good start. Share the plan with your team so they respect the blocks. Moving some updates to written messages instead of calls frees time too. On Friday afternoons, try to finish with a short review of the week and a plan for Monday, so you can switch off properly at the weekend.
"""),
            Evidence("2023/12/04 19:30", "job", """
U!: Since November our company has switched to a four-day week, so I'm on 32 hours now, Monday to Thursday. How do I make the most of my Fridays without wasting them?
A: That is a great change. Decide what you want Fridays to be for: rest, errands, hobbies or time with people. Many people keep a loose routine, such as a morning activity like a class or a long walk, and an afternoon for errands, so the day does not disappear on the sofa. Protect it from work emails.
U: Any ideas for hobbies?
A: Fridays are perfect for things that need daytime hours, like a pottery class, volunteering, or a long bike ride. Some people use the day for a course or learning a language, while others use it for exercise when gyms and pools are quiet. Try a few options over the first couple of months and keep what leaves you feeling rested.
U: Thanks.
A: Enjoy the extra day. It is worth checking in with yourself after a month or two about how the new rhythm feels. If the four longer days are tiring, small changes like a proper lunch break and a firm finishing time can make them more sustainable.
"""),
        ],
    ),
    Spec(
        qid="lmh-035", qtype="knowledge-update",
        question="How many chickens do we keep now?",
        answer="Five (they had three hens and added two more in August 2023).",
        asked="2023/10/18 08:30", start="2023/02/15", avoid=frozenset({"pets", "garden"}),
        evidence=[
            Evidence("2023/04/02 10:15", "cooking", """
U!: Our three hens are laying like crazy this spring and we've got over two dozen eggs in the kitchen. What can I make that uses a lot of eggs?
A: Lucky you. Good egg-heavy recipes include a big Spanish tortilla or frittata, shakshuka, quiche, egg fried rice, lemon curd, custard tarts and pavlova, which uses the whites, while the yolks can go into homemade mayonnaise or carbonara. Eggs also freeze well if you beat them lightly with a pinch of salt or sugar first.
U: How long do fresh eggs keep?
A: Unwashed fresh eggs keep for about three weeks at room temperature and longer in the fridge. Date them as you collect them and use the oldest first. Do not wash eggs until just before use, since washing removes the natural protective coating. Store them pointed end down to keep the yolk centred.
U: Great.
A: A float test can help check older eggs: fresh ones sink, while very old ones float. Giving surplus eggs to neighbours or swapping them for garden produce is a nice way to avoid waste, and pickled eggs or egg-rich baking like sponge cakes are other good ways to use them up.
"""),
            Evidence("2023/08/06 16:50", "pets", """
U!: We've just brought home two more hens, point-of-lay pullets, so we'll have five. How do I introduce them to the three we already have without fights?
A: Introduce them gradually. Keep the new hens in a separate run next to the existing flock for about a week so they can see each other without contact. Then let them mix in a neutral space, with several feeders and water points, and places to hide.
U: Will there be pecking?
A: Some pecking is normal while they work out the pecking order. Step in only if there is blood or one hen is bullied constantly. Scattering some grain or hanging greens in the run gives them something else to focus on, and adding extra perches means the lower-ranked hens can get out of the way.
U: OK, we'll take it slowly.
A: Most flocks settle within two or three weeks. Keep an eye on whether the new hens are eating and drinking, since dominant birds sometimes guard the feeder. Quarantining new birds for a couple of weeks before the introduction is also wise, to avoid bringing in mites or illness.
"""),
        ],
    ),
    Spec(
        qid="lmh-036_abs", qtype="knowledge-update",
        question="How much am I paying for my yoga studio membership now?",
        answer="You never mentioned a yoga studio membership. You mentioned a regular gym "
               "membership at £29 a month, which you later replaced with a bouldering gym at £48 "
               "a month.",
        asked="2024/06/25 18:10", start="2023/12/01", avoid=frozenset({"fitness", "budget"}),
        evidence=[
            Evidence("2024/01/10 20:40", "finance", """
U: I want to cut back on subscriptions this year. How do I find everything I'm paying for?
A: Go through the last three months of bank and credit card statements and list every recurring payment. Check your app store subscriptions and PayPal too. For each one, ask whether you used it in the last month. Subscription tracking features in many banking apps can list these automatically. Cancel anything you have not used, and set a reminder a week before annual renewals.
U!: The gym is the big one: £29 a month and I only go about twice a week. Is it worth keeping?
A: At twice a week, that works out to about £3.35 per visit, which is reasonable if you enjoy it. If you are not going, consider pausing or a cheaper option. Consider whether you would exercise as much without it, and whether a different gym or activity would suit you better. Some gyms offer off-peak memberships at a lower price, which may work if your schedule is flexible.
U: OK, I'll think about it.
A: Review the list again in a few months. Subscriptions tend to creep back over time. Putting the savings straight into a separate account on payday makes the result visible and gives you an incentive to stick with the changes.
"""),
            Evidence("2024/04/15 19:05", "fitness", """
U!: I cancelled the gym and joined a bouldering wall instead. It's £48 a month, but I actually go. My forearms are destroyed though. Any tips?
A: Forearm pump and soreness are very common for new climbers. Warm up with easy climbs, rest well between attempts, and climb with straight arms where possible. Take rest days between sessions so your tendons can adapt, since they strengthen more slowly than muscles.
U: How often should I climb as a beginner?
A: Two or three sessions a week is plenty at first. Leave at least a day between sessions, and mix in some easier climbs to practise technique rather than always trying your hardest problems. Most climbing walls run beginner sessions or technique classes, which are a good way to meet people and learn good habits early.
U: Thanks.
A: Enjoy it, and remember to stretch afterwards. Gentle forearm and finger stretches, and some pulling and pushing exercises, help balance the muscles climbing uses. If you feel pain in a finger rather than general soreness, take a break, since finger tendon injuries are common.
"""),
        ],
    ),
]


# ---------------------------------------------------------------------------
# Building the haystacks, with the dev set's machinery.
# ---------------------------------------------------------------------------


def _holdout_ids(record: dict[str, Any]) -> dict[str, Any]:
    """Give evidence sessions ``h-`` ids (``s-007a-travel`` -> ``h-007a-travel``)."""
    rename = {sid: "h-" + sid[2:] for sid in record["answer_session_ids"]}
    record["haystack_session_ids"] = [rename.get(s, s) for s in record["haystack_session_ids"]]
    record["answer_session_ids"] = [rename[s] for s in record["answer_session_ids"]]
    return record


def _check_design(fillers: list[base.Filler]) -> None:
    """Raise ValueError on anything this set's design forbids beyond ``base.validate``."""
    if len({f.session_id for f in fillers}) != len(fillers):
        raise ValueError("duplicate filler session ids")
    if not all(f.session_id.startswith("h-") for f in FILLERS):
        raise ValueError("new filler ids must start with 'h-'")
    expected = {f"lmh-{n:03d}" for n in range(1, 37)}
    if {s.qid.removesuffix("_abs") for s in SPECS} != expected or len(SPECS) != 36:
        raise ValueError("expected question ids lmh-001 ... lmh-036")
    if sum(s.qid.endswith("_abs") for s in SPECS) != 3:
        raise ValueError("expected three abstention questions")
    for spec in SPECS:
        asked = base.parse_when(spec.asked)
        if not 2023 <= asked.year <= 2024:
            raise ValueError(f"{spec.qid}: question date outside 2023-2024")
        for ev in spec.evidence:
            if not base.parse_when(spec.start + " 00:00") <= base.parse_when(ev.when) < asked:
                raise ValueError(f"{spec.qid}: evidence dated outside [start, asked)")
        if spec.qtype == "multi-session" and not 2 <= len(spec.evidence) <= 3:
            raise ValueError(f"{spec.qid}: multi-session needs 2-3 evidence sessions")
        if spec.qtype == "knowledge-update" and len(spec.evidence) != 2:
            raise ValueError(f"{spec.qid}: knowledge-update needs an old and a new session")


def build(seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """All records, in question-id order."""
    fillers = base.FILLERS + FILLERS
    _check_design(fillers)
    records = [_holdout_ids(base.build_record(spec, fillers, seed))
               for spec in sorted(SPECS, key=lambda s: s.qid)]
    base.validate(records)
    return records


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    records = build(args.seed)
    text = base.dumps(records)
    args.output.write_text(text, encoding="utf-8")
    sessions = sum(len(r["haystack_session_ids"]) for r in records)
    used = {s for r in records for s in r["haystack_session_ids"]} - {
        s for r in records for s in r["answer_session_ids"]}
    print(f"wrote {args.output}: {len(records)} questions, {sessions} sessions "
          f"({len(used)} distinct fillers used, {len(FILLERS)} of them new), "
          f"{len(text.encode()) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
